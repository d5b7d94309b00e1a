"""Question 24's reversible block in Numba CUDA: the forward, the inverse that rebuilds the
inputs from the outputs, and the backward that needs nothing saved.

The block is two couplings, y1 = x1 + F(x2) and y2 = x2 + G(y1), with F(z) = tanh(z Wf + bf)
and G alike. One kernel does a coupling either way, so the forward and the inverse are the
same two launches in opposite orders; the backward walks the couplings back.

1. ``coupling_kernel``: thread e = (n, j) computes z = bias_j + b[n, :] . W[:, j], keeps
   t = tanh(z) (the backward's derivative, 1 - t^2) and writes out = a + sign * t.
   Forward: (x1, x2, Wf, +1) -> y1, then (x2, y1, Wg, +1) -> y2. Inverse, last coupling
   first: (y2, y1, Wg, -1) -> x2, then (y1, x2, Wf, -1) -> x1. Each launch needs the whole
   row of its b, which the previous launch wrote: the order is the only synchronisation.
2. ``coupling_backward_kernel``: thread (n, i) first computes its row's pre-activation
   gradient dz[n, :] = dout[n, :] * (1 - t[n, :]^2) itself (D products, cheaper than a
   second launch and a barrier across blocks), stores dz[n, i], and writes
   d_in[n, i] = carry[n, i] + dz[n, :] . W[i, :]. G's backward: (dy2, tg, Wg, carry dy1)
   gives du and dy1 + du Wg^T, y1's total gradient; F's: (that, tf, Wf, carry dy2) gives dv
   and dx2 = dy2 + dv Wf^T.
3. ``weight_grads_kernel``: one thread per weight (and one row of threads for the bias) adds
   its products over the N rows: dW = b^T dz, db = sum dz, in a fixed order, no atomics.

The stack (``revnet_loss_and_grads``) keeps one block's arrays on the device at a time, so
its device memory does not grow with the number of blocks: the point of the question.

Indices are unsigned 64-bit over flat row-major arrays (``_u``): no negative-index check on
every load. Constants (the sign, one, zero) arrive in the arrays' dtype, so a float32 launch
runs no float64 instruction.

The launchers (``*_device``) take device arrays in their natural shapes, hand the kernels
flat views (a ravel: no copy) and only launch: the benchmark times them and
kernels/runtime/dry_run.py checks their grids at any size. A block's parameters (and their
gradients) travel as ``Params``. The host functions at the bottom take and return numpy
arrays.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_memory_budget_kernels.py
Check and time it: python -m backprop_traps.kernels.memory_budget (from any folder) runs these
kernels on the benchmark's tiny cases (kernels/cases/memory_budget.py) in float64 and float32
against the solution notebook, and times them (kernels/runtime/self_check.py; the simulator without a
GPU).

Shapes: N rows, D features per half. x1, x2, y1, y2, t, dz: (N, D), flat (N * D,) inside the
kernels; Wf, Wg (D, D) flat (D * D,); bf, bg (D,).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.memory_budget: no GPU? the simulator
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math
from typing import NamedTuple

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda

THREADS_PER_BLOCK = 256
MAX_BLOCKS = 8192  # grid-stride loops cover the rest: a 1-D grid, far under its limit


def launch_config(elements: int):
    """(blocks, threads) for a grid-stride loop over ``elements``."""
    return max(1, min(MAX_BLOCKS, math.ceil(elements / THREADS_PER_BLOCK))), THREADS_PER_BLOCK


@cuda.jit(device=True)
def _u(i):
    return numba.uint64(i)


# 1. a coupling, forward or inverse ---------------------------------------------------------------
@cuda.jit
def coupling_kernel(a, b, W, bias, sign, D, out, t):
    # a, b: N*D; W: D*D; bias: D; sign: +1 or -1 in the dtype; D: features;
    # out = a + sign * tanh(b W + bias), t = tanh(...): N*D each (written)
    d_ = _u(D)
    for e in range(_u(cuda.grid(1)), _u(a.size), _u(cuda.gridsize(1))):
        row, j = (e // d_) * d_, e % d_
        z = bias[j]
        for k in range(d_):
            z += b[row + k] * W[k * d_ + j]
        tv = math.tanh(z)
        t[e] = tv
        out[e] = a[e] + sign * tv


# 2. a coupling's backward --------------------------------------------------------------------------
@cuda.jit
def coupling_backward_kernel(dout, t, W, carry, one, D, dz, d_in):
    # dout, t, carry: N*D; W: D*D; one: 1 in the dtype; dz: N*D (written) = dout * (1 - t^2);
    # d_in: N*D (written) = carry + dz W^T
    d_ = _u(D)
    for e in range(_u(cuda.grid(1)), _u(dout.size), _u(cuda.gridsize(1))):
        row, i = (e // d_) * d_, e % d_
        acc = carry[e]
        for j in range(d_):  # the row's dz, recomputed by each of its threads: no barrier
            tv = t[row + j]
            g = dout[row + j] * (one - tv * tv)
            acc += g * W[i * d_ + j]
            if j == i:
                dz[e] = g
        d_in[e] = acc


# 3. the weight gradients ---------------------------------------------------------------------------
@cuda.jit
def weight_grads_kernel(b, dz, zero, D, dW, dbias):
    # b, dz: N*D; zero: 0 in the dtype; dW: D*D (written) = b^T dz; dbias: D (written) = sum dz.
    # Thread e < D*D is weight (e // D, e % D); thread D*D + j is bias j.
    d_ = _u(D)
    rows = _u(b.size) // d_
    for e in range(_u(cuda.grid(1)), d_ * d_ + d_, _u(cuda.gridsize(1))):
        r, j = e // d_, e % d_
        acc = zero
        for n in range(rows):
            g = dz[n * d_ + j]
            acc += g if r == d_ else b[n * d_ + r] * g
        if r == d_:
            dbias[j] = acc
        else:
            dW[e] = acc


# launchers: device arrays in, launched -------------------------------------------------------------
class Params(NamedTuple):
    """A block's parameters on the device, or their gradients: Wf, Wg (D, D); bf, bg (D,)."""
    Wf: object
    bf: object
    Wg: object
    bg: object


def coupling_device(d_a, d_b, d_W, d_bias, sign, d_out, d_t):
    """Kernel 1: d_out = a + sign * tanh(b W + bias) and d_t = tanh(...) (N, D), from d_a and
    d_b (N, D), d_W (D, D) and d_bias (D,)."""
    coupling_kernel[launch_config(d_a.size)](d_a.ravel(), d_b.ravel(), d_W.ravel(), d_bias,
                                             d_a.dtype.type(sign), d_bias.size, d_out.ravel(), d_t.ravel())


def coupling_backward_device(d_dout, d_t, d_W, d_carry, d_dz, d_in):
    """Kernel 2: d_dz = dout * (1 - t^2) and d_in = carry + dz W^T (N, D)."""
    one = d_dout.dtype.type(1)
    coupling_backward_kernel[launch_config(d_dout.size)](d_dout.ravel(), d_t.ravel(), d_W.ravel(), d_carry.ravel(),
                                                         one, d_W.shape[0], d_dz.ravel(), d_in.ravel())


def weight_grads_device(d_b, d_dz, d_dW, d_dbias):
    """Kernel 3: d_dW (D, D) = b^T dz and d_dbias (D,) = the column sums of dz (N, D)."""
    D = d_dbias.size
    weight_grads_kernel[launch_config(D * (D + 1))](d_b.ravel(), d_dz.ravel(), d_b.dtype.type(0), D, d_dW.ravel(),
                                                    d_dbias)


def rev_forward_device(d_x1, d_x2, p, d_y1, d_y2, d_t):
    """The forward, kernel 1 twice: d_y1 = x1 + F(x2), then d_y2 = x2 + G(y1) (N, D). d_t (N, D)
    takes each coupling's tanh, which the forward does not keep."""
    coupling_device(d_x1, d_x2, p.Wf, p.bf, 1, d_y1, d_t)
    coupling_device(d_x2, d_y1, p.Wg, p.bg, 1, d_y2, d_t)


def rev_inverse_device(d_y1, d_y2, p, d_x1, d_x2, d_tf, d_tg):
    """The inverse, kernel 1 twice, last coupling first: d_x2 = y2 - G(y1), then d_x1 = y1 - F(x2)
    (N, D); d_tg and d_tf keep each coupling's tanh for the backward."""
    coupling_device(d_y2, d_y1, p.Wg, p.bg, -1, d_x2, d_tg)
    coupling_device(d_y1, d_x2, p.Wf, p.bf, -1, d_x1, d_tf)


def rev_backward_device(d_dy1, d_dy2, d_y1, d_y2, p, d_x1, d_x2, d_tf, d_tg, d_du, d_dv, d_dx1, d_dx2, grads):
    """The backward from the outputs alone (N, D each): the inverse rebuilds d_x1 and d_x2 (and
    d_tf, d_tg); G's coupling backward writes d_du and d_dx1 = dy1 + du Wg^T (y1's whole
    gradient, which is x1's), kernel 3 its weights; F's writes d_dv and d_dx2 = dy2 + dv Wf^T.
    ``grads`` is a Params of the gradients' arrays."""
    rev_inverse_device(d_y1, d_y2, p, d_x1, d_x2, d_tf, d_tg)
    coupling_backward_device(d_dy2, d_tg, p.Wg, d_dy1, d_du, d_dx1)
    weight_grads_device(d_y1, d_du, grads.Wg, grads.bg)
    coupling_backward_device(d_dx1, d_tf, p.Wf, d_dy2, d_dv, d_dx2)
    weight_grads_device(d_x2, d_dv, grads.Wf, grads.bf)


# host functions: numpy in, numpy out ---------------------------------------------------------------
def _on_device(dtype, *arrays):
    return [cuda.to_device(np.ascontiguousarray(a, dtype=dtype)) for a in arrays]


def _empty(shape, dtype, count):
    return [cuda.device_array(shape, dtype=dtype) for _ in range(count)]


def _backward(d_dy1, d_dy2, d_y1, d_y2, p):
    """(x1, x2, dx1, dx2, grads) on the device, from the outputs alone."""
    shape, dtype = d_y1.shape, d_y1.dtype
    d_x1, d_x2, d_tf, d_tg, d_du, d_dv, d_dx1, d_dx2 = _empty(shape, dtype, 8)
    grads = Params(*(cuda.device_array(a.shape, dtype=dtype) for a in p))
    rev_backward_device(d_dy1, d_dy2, d_y1, d_y2, p, d_x1, d_x2, d_tf, d_tg, d_du, d_dv, d_dx1, d_dx2, grads)
    return d_x1, d_x2, d_dx1, d_dx2, grads


def rev_forward(x1, x2, Wf, bf, Wg, bg):
    """(y1, y2) as the solution's ``rev_forward``, in x1's dtype."""
    dtype = np.asarray(x1).dtype
    d_x1, d_x2 = _on_device(dtype, x1, x2)
    d_y1, d_y2, d_t = _empty(d_x1.shape, dtype, 3)
    rev_forward_device(d_x1, d_x2, Params(*_on_device(dtype, Wf, bf, Wg, bg)), d_y1, d_y2, d_t)
    return d_y1.copy_to_host(), d_y2.copy_to_host()


def rev_inverse(y1, y2, Wf, bf, Wg, bg):
    """(x1, x2) as the solution's ``rev_inverse``: the same kernel, the other sign and order."""
    dtype = np.asarray(y1).dtype
    d_y1, d_y2 = _on_device(dtype, y1, y2)
    d_x1, d_x2, d_tf, d_tg = _empty(d_y1.shape, dtype, 4)
    rev_inverse_device(d_y1, d_y2, Params(*_on_device(dtype, Wf, bf, Wg, bg)), d_x1, d_x2, d_tf, d_tg)
    return d_x1.copy_to_host(), d_x2.copy_to_host()


def rev_backward(dy1, dy2, y1, y2, Wf, bf, Wg, bg):
    """(x1, x2, dx1, dx2, dWf, dbf, dWg, dbg) as the solution's ``rev_backward``."""
    dtype = np.asarray(y1).dtype
    params = Params(*_on_device(dtype, Wf, bf, Wg, bg))
    x1, x2, dx1, dx2, grads = _backward(*_on_device(dtype, dy1, dy2, y1, y2), params)
    return tuple(a.copy_to_host() for a in (x1, x2, dx1, dx2, *grads))


def revnet_loss_and_grads(blocks, x1, x2, t1, t2):
    """(loss, grads) as the solution's: one block's arrays on the device at a time."""
    shape, dtype = np.shape(x1), np.asarray(x1).dtype
    params = [Params(*_on_device(dtype, *p)) for p in blocks]
    d_x1, d_x2 = _on_device(dtype, x1, x2)
    (d_t,) = _empty(shape, dtype, 1)
    for p in params:
        d_y1, d_y2 = _empty(shape, dtype, 2)
        rev_forward_device(d_x1, d_x2, p, d_y1, d_y2, d_t)
        d_x1, d_x2 = d_y1, d_y2  # the previous pair is freed
    y1, y2 = (a.copy_to_host().astype(np.float64) for a in (d_x1, d_x2))
    N = shape[0]
    loss = 0.5 * (np.sum((y1 - t1) ** 2) + np.sum((y2 - t2) ** 2)) / N
    d_dy1, d_dy2 = _on_device(dtype, (y1 - t1) / N, (y2 - t2) / N)
    grads = [None] * len(params)
    for i in reversed(range(len(params))):
        d_x1, d_x2, d_dy1, d_dy2, g = _backward(d_dy1, d_dy2, d_x1, d_x2, params[i])
        grads[i] = tuple(a.copy_to_host() for a in g)
    return float(loss), grads


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("memory_budget"))
