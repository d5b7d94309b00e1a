"""The block that starts as the identity, in Numba CUDA: out = h + gain * relu(h @ W1) @ W2 with a
per-channel gain (LayerScale; ReZero is the same gain in every channel), forward above backward.

Question 22's diagnosis reads logs on the host; what runs on a GPU is the fix, the gated block.
Its matrix products are question 21's kernels (kernels/residual_backward.py: flat arrays, unsigned
offsets, one thread per output entry, each weight gradient a fixed-order sum over the rows); this
file adds what the gain brings:

  forward   1. residual_backward.hidden_forward_kernel: a = relu(h @ W1).
            2. gated_output_kernel: f = a @ W2 (kept: the gain's gradient reads it) and
               out = h + gain * f, one thread per (n, j).
  backward  3. gain_grad_kernel: dgain[j] = sum_n dout[n, j] * f[n, j], one thread per channel,
               the rows in order (no atomics: the same bits every run). Not 0 at gain 0.
            4. scale_rows_kernel: g = dout * gain, what reaches the branch's output.
            5. residual_backward.hidden_backward_kernel on g: dz = (g @ W2^T) * [a > 0].
            6. residual_backward.input_backward_kernel with the skip: dh = dout + dz @ W1^T (the
               identity passes dout as is).
            7. residual_backward.weight_grad_kernel: dW1 = h^T dz, dW2 = a^T g.
At gain 0: out = h exactly, dh = dout, dW1 = dW2 = 0 and dgain = sum_n dout * f.

Version 2 (kernels/training_symptoms_v2.py) tiles the products (question 21's version 2), puts
the gain in the tile's epilogue, and gets the gain's gradient and dout * gain in one pass over
dout and f. The host functions at the bottom run either (``version``).

The launchers (``gated_forward_device``, ``gated_backward_device``) take
device arrays in their natural shapes and only launch (question 21's launchers for its
kernels): the benchmark times them and kernels/runtime/dry_run.py checks their grids at any size. The
host functions at the bottom take and return numpy arrays.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_training_symptoms_kernels.py
Check and time it: python -m backprop_traps.kernels.training_symptoms (from any folder) runs
these kernels on the benchmark's tiny cases (kernels/cases/training_symptoms.py) in float64
and float32 against the solution notebook, and times them (kernels/runtime/self_check.py; the
simulator without a GPU).

Shapes: N rows, D channels, H hidden units. h, dout, out, f, g, dh (N, D); W1 (D, H); W2 (H, D);
a, dz (N, H); gain, dgain (D,). Flat and C-ordered inside the
kernels; math in h's dtype.
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.training_symptoms: no GPU? the simulator first
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import numpy as np

from backprop_traps.kernels.residual_backward import (THREADS, _blocks, _u, hidden_backward_device,
                                                      hidden_forward_device, input_backward_device,
                                                      weight_grad_device)
from backprop_traps.kernels.runtime.device import cuda


# 2. the gated output --------------------------------------------------------------------------
@cuda.jit
def gated_output_kernel(h, a, W2, gain, f, out, rows, D, H, zero):
    # h: N*D; a: N*H; W2: H*D; gain: D; f, out: N*D (written), f = a @ W2, out = h + gain * f
    i = cuda.grid(1)
    if i < rows * D:
        flat, Du, Hu = _u(i), _u(D), _u(H)
        n, j = flat // Du, flat % Du
        acc = zero
        for k in range(Hu):
            acc += a[n * Hu + k] * W2[k * Du + j]
        f[flat] = acc
        out[flat] = h[flat] + gain[j] * acc


# 3. + 4. what the gain brings to the backward ---------------------------------------------------
@cuda.jit
def gain_grad_kernel(dout, f, dgain, rows, D, zero):
    # dout, f: N*D; dgain: D (written), the column sums of dout * f, rows in order
    j = cuda.grid(1)
    if j < D:
        Du, col = _u(D), _u(j)
        acc = zero
        for n in range(_u(rows)):
            acc += dout[n * Du + col] * f[n * Du + col]
        dgain[col] = acc


@cuda.jit
def scale_rows_kernel(dout, gain, g, rows, D):
    # dout: N*D; gain: D; g: N*D (written), g = dout * gain, channel by channel
    i = cuda.grid(1)
    if i < rows * D:
        flat = _u(i)
        g[flat] = dout[flat] * gain[flat % _u(D)]


# launchers: device arrays in, launched -----------------------------------------------------------
def gated_forward_device(d_h, d_W1, d_W2, d_gain, d_a, d_f, d_out):
    """Kernels 1 and 2: d_a (N, H) = relu(h @ W1), d_f (N, D) = a @ W2 and d_out (N, D) =
    h + gain * f, from d_h (N, D), d_W1 (D, H), d_W2 (H, D) and d_gain (D,)."""
    (N, D), H = d_h.shape, d_W1.shape[1]
    hidden_forward_device(d_h, d_W1, d_a)
    gated_output_kernel[_blocks(N * D), THREADS](d_h.ravel(), d_a.ravel(), d_W2.ravel(), d_gain, d_f.ravel(),
                                                 d_out.ravel(), N, D, H, d_h.dtype.type(0))


def gated_backward_device(d_dout, d_h, d_a, d_f, d_W1, d_W2, d_gain, d_dgain, d_g, d_dz, d_dh, d_dW1, d_dW2):
    """Kernels 3 to 7 from d_dout (N, D) and the forward's d_a (N, H) and d_f (N, D): d_dgain
    (D,), d_g (N, D) = dout * gain, d_dz (N, H), d_dh (N, D) = dout + dz @ W1^T, d_dW1 (D, H)
    and d_dW2 (H, D)."""
    N, D = d_dout.shape
    gain_grad_kernel[_blocks(D), THREADS](d_dout.ravel(), d_f.ravel(), d_dgain, N, D, d_dout.dtype.type(0))
    scale_rows_kernel[_blocks(N * D), THREADS](d_dout.ravel(), d_gain, d_g.ravel(), N, D)
    hidden_backward_device(d_g, d_a, d_W2, d_dz)
    input_backward_device(d_dout, d_dz, d_W1, True, d_dh)  # the identity passes dout as is
    weight_grad_device(d_h, d_dz, d_dW1)
    weight_grad_device(d_a, d_g, d_dW2)


# host functions: numpy in, numpy out ------------------------------------------------------------
def _on_device(dtype, *arrays):
    return [cuda.to_device(np.ascontiguousarray(a, dtype=dtype)) for a in arrays]


def _launchers(version: int):
    """(forward, backward) launchers of version 1 (this module's) or 2 (training_symptoms_v2)."""
    if version == 2:
        from backprop_traps.kernels import training_symptoms_v2 as v2
        return v2.gated_forward_device, v2.gated_backward_device
    if version != 1:
        raise ValueError(f"version is 1 or 2, not {version!r}")
    return gated_forward_device, gated_backward_device


def _forward(d_h, d_W1, d_W2, d_gain, version):
    """The forward's device arrays: (out, a, f)."""
    (N, D), H, dtype = d_h.shape, d_W1.shape[1], d_h.dtype
    d_a = cuda.device_array((N, H), dtype=dtype)
    d_f, d_out = cuda.device_array((N, D), dtype=dtype), cuda.device_array((N, D), dtype=dtype)
    forward, _ = _launchers(version)
    forward(d_h, d_W1, d_W2, d_gain, d_a, d_f, d_out)
    return d_out, d_a, d_f


def gated_block_forward(h, W1, W2, gain, version=1):
    """out (N, D) as the solution's ``gated_block_forward``, in h's dtype."""
    h = np.asarray(h)
    d_out, _, _ = _forward(*_on_device(h.dtype, h, W1, W2, gain), version)
    return d_out.copy_to_host()


def gated_block_backward(dout, h, W1, W2, gain, version=1):
    """(dh, dW1, dW2, dgain) as the solution's ``gated_block_backward``, in h's dtype; the
    forward's a and f are recomputed from h."""
    h = np.asarray(h)
    dtype, (N, D), H = h.dtype, h.shape, np.shape(W1)[1]
    d_dout, d_h, d_W1, d_W2, d_gain = _on_device(dtype, dout, h, W1, W2, gain)
    _, d_a, d_f = _forward(d_h, d_W1, d_W2, d_gain, version)
    d_dgain = cuda.device_array(D, dtype=dtype)
    d_g, d_dh = cuda.device_array((N, D), dtype=dtype), cuda.device_array((N, D), dtype=dtype)
    d_dz = cuda.device_array((N, H), dtype=dtype)
    d_dW1, d_dW2 = cuda.device_array((D, H), dtype=dtype), cuda.device_array((H, D), dtype=dtype)
    _, backward = _launchers(version)
    backward(d_dout, d_h, d_a, d_f, d_W1, d_W2, d_gain, d_dgain, d_g, d_dz, d_dh, d_dW1, d_dW2)
    return d_dh.copy_to_host(), d_dW1.copy_to_host(), d_dW2.copy_to_host(), d_dgain.copy_to_host()


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("training_symptoms"))
