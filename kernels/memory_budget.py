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

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_memory_budget_kernels.py
Check and time it: python -m backprop_traps.kernels.memory_budget (from the repository root)
runs these kernels on the benchmark's tiny cases (benchmarks/cases_memory_budget.py) in
float64 and float32 against the solution notebook, and times them (kernels/self_check.py).

Shapes: N rows, D features per half. x1, x2, y1, y2, t, dz: (N, D), flat (N * D,) inside the
kernels; Wf, Wg (D, D) flat (D * D,); bf, bg (D,).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.memory_budget: no GPU? the simulator
    from backprop_traps.kernels.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numba
import numpy as np
from numba import cuda

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


# host functions: numpy in, numpy out ---------------------------------------------------------------
class _Block:
    """One block's parameters on the device, flat, in the dtype of the activations."""

    def __init__(self, Wf, bf, Wg, bg, dtype):
        self.D = int(np.shape(bf)[0])
        self.Wf, self.bf, self.Wg, self.bg = (cuda.to_device(np.ascontiguousarray(a, dtype=dtype).ravel())
                                              for a in (Wf, bf, Wg, bg))
        self.dtype = np.dtype(dtype)


def _coupling(a, b, W, bias, sign, blk):
    out, t = (cuda.device_array(a.size, dtype=blk.dtype) for _ in range(2))
    coupling_kernel[launch_config(a.size)](a, b, W, bias, blk.dtype.type(sign), blk.D, out, t)
    return out, t


def _forward(d_x1, d_x2, blk):
    y1, _ = _coupling(d_x1, d_x2, blk.Wf, blk.bf, 1, blk)
    y2, _ = _coupling(d_x2, y1, blk.Wg, blk.bg, 1, blk)
    return y1, y2


def _backward(d_dy1, d_dy2, d_y1, d_y2, blk):
    """(x1, x2, dx1, dx2, dWf, dbf, dWg, dbg) on the device, from the outputs alone."""
    x2, tg = _coupling(d_y2, d_y1, blk.Wg, blk.bg, -1, blk)  # the inverse, last coupling first
    x1, tf = _coupling(d_y1, x2, blk.Wf, blk.bf, -1, blk)
    size, dt = d_y1.size, blk.dtype
    du, dy1_all, dv, dx2 = (cuda.device_array(size, dtype=dt) for _ in range(4))
    grads = [cuda.device_array(n, dtype=dt) for n in (blk.D * blk.D, blk.D, blk.D * blk.D, blk.D)]
    one, zero = dt.type(1), dt.type(0)
    coupling_backward_kernel[launch_config(size)](d_dy2, tg, blk.Wg, d_dy1, one, blk.D, du, dy1_all)
    weight_grads_kernel[launch_config(blk.D * (blk.D + 1))](d_y1, du, zero, blk.D, grads[2], grads[3])
    coupling_backward_kernel[launch_config(size)](dy1_all, tf, blk.Wf, d_dy2, one, blk.D, dv, dx2)
    weight_grads_kernel[launch_config(blk.D * (blk.D + 1))](x2, dv, zero, blk.D, grads[0], grads[1])
    return x1, x2, dy1_all, dx2, *grads


def _device(*arrays, dtype=None):
    return [cuda.to_device(np.ascontiguousarray(a, dtype=dtype or np.asarray(a).dtype).ravel()) for a in arrays]


def rev_forward(x1, x2, Wf, bf, Wg, bg):
    """(y1, y2) as the solution's ``rev_forward``, in x1's dtype."""
    shape, dtype = np.shape(x1), np.asarray(x1).dtype
    blk = _Block(Wf, bf, Wg, bg, dtype)
    return tuple(y.copy_to_host().reshape(shape) for y in _forward(*_device(x1, x2, dtype=dtype), blk))


def rev_inverse(y1, y2, Wf, bf, Wg, bg):
    """(x1, x2) as the solution's ``rev_inverse``: the same kernel, the other sign and order."""
    shape, dtype = np.shape(y1), np.asarray(y1).dtype
    blk = _Block(Wf, bf, Wg, bg, dtype)
    d_y1, d_y2 = _device(y1, y2, dtype=dtype)
    x2, _ = _coupling(d_y2, d_y1, blk.Wg, blk.bg, -1, blk)
    x1, _ = _coupling(d_y1, x2, blk.Wf, blk.bf, -1, blk)
    return x1.copy_to_host().reshape(shape), x2.copy_to_host().reshape(shape)


def rev_backward(dy1, dy2, y1, y2, Wf, bf, Wg, bg):
    """(x1, x2, dx1, dx2, dWf, dbf, dWg, dbg) as the solution's ``rev_backward``."""
    shape, dtype = np.shape(y1), np.asarray(y1).dtype
    blk = _Block(Wf, bf, Wg, bg, dtype)
    out = _backward(*_device(dy1, dy2, y1, y2, dtype=dtype), blk)
    shapes = [shape] * 4 + [np.shape(Wf), np.shape(bf), np.shape(Wg), np.shape(bg)]
    return tuple(a.copy_to_host().reshape(s) for a, s in zip(out, shapes))


def revnet_loss_and_grads(blocks, x1, x2, t1, t2):
    """(loss, grads) as the solution's: one block's arrays on the device at a time."""
    shape, dtype = np.shape(x1), np.asarray(x1).dtype
    params = [_Block(*p, dtype) for p in blocks]
    d_x1, d_x2 = _device(x1, x2, dtype=dtype)
    for blk in params:
        d_x1, d_x2 = _forward(d_x1, d_x2, blk)  # the previous pair is freed
    y1, y2 = (a.copy_to_host().reshape(shape).astype(np.float64) for a in (d_x1, d_x2))
    N = shape[0]
    loss = 0.5 * (np.sum((y1 - t1) ** 2) + np.sum((y2 - t2) ** 2)) / N
    d_dy1, d_dy2 = _device((y1 - t1) / N, (y2 - t2) / N, dtype=dtype)
    grads = [None] * len(params)
    for i in reversed(range(len(params))):
        d_x1, d_x2, d_dy1, d_dy2, *g = _backward(d_dy1, d_dy2, d_x1, d_x2, params[i])
        grads[i] = tuple(a.copy_to_host().reshape(np.shape(p)) for a, p in zip(g, blocks[i]))
    return float(loss), grads


if __name__ == "__main__":  # check against the solution notebook and time: kernels/self_check.py
    import sys
    from backprop_traps.kernels.self_check import main
    sys.exit(main("memory_budget"))
