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

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_training_symptoms_kernels.py
Check and time it: python -m backprop_traps.kernels.training_symptoms (from the repository root)
runs these kernels on the benchmark's tiny cases (benchmarks/cases_training_symptoms.py) in
float64 and float32 against the solution notebook (kernels/self_check.py).

Shapes: N rows, D channels, H hidden units. h, dout, out, f, g, dh (N, D); W1 (D, H); W2 (H, D);
a, dz (N, H); gain, dgain (D,). Flat and C-ordered on the device; math in h's dtype.
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.training_symptoms: no GPU? the simulator first
    from backprop_traps.kernels.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import numpy as np
from numba import cuda

from backprop_traps.kernels.residual_backward import (THREADS, _blocks, _device, _u, hidden_backward_kernel,
                                                      hidden_forward_kernel, input_backward_kernel,
                                                      weight_grad_kernel)


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


# host functions: numpy in, numpy out ------------------------------------------------------------
def _forward_dev(d_h, d_W1, d_W2, d_gain, N, D, H, dtype):
    """Kernels 1 and 2 on device arrays: (out, a, f)."""
    zero = dtype.type(0)
    d_a = cuda.device_array(N * H, dtype=dtype)
    d_f, d_out = cuda.device_array(N * D, dtype=dtype), cuda.device_array(N * D, dtype=dtype)
    hidden_forward_kernel[_blocks(N * H), THREADS](d_h, d_W1, d_a, N, D, H, zero)
    gated_output_kernel[_blocks(N * D), THREADS](d_h, d_a, d_W2, d_gain, d_f, d_out, N, D, H, zero)
    return d_out, d_a, d_f


def gated_block_forward(h, W1, W2, gain):
    """out (N, D) as the solution's ``gated_block_forward``, in h's dtype."""
    h = np.asarray(h)
    dtype, (N, D), H = h.dtype, h.shape, W1.shape[1]
    d_out, _, _ = _forward_dev(*(_device(a, dtype) for a in (h, W1, W2, gain)), N, D, H, dtype)
    return d_out.copy_to_host().reshape(N, D)


def gated_block_backward(dout, h, W1, W2, gain):
    """(dh, dW1, dW2, dgain) as the solution's ``gated_block_backward``, in h's dtype; the
    forward's a and f are recomputed from h."""
    h = np.asarray(h)
    dtype, (N, D), H = h.dtype, h.shape, W1.shape[1]
    zero = dtype.type(0)
    d_dout, d_h, d_W1, d_W2, d_gain = (_device(a, dtype) for a in (dout, h, W1, W2, gain))
    _, d_a, d_f = _forward_dev(d_h, d_W1, d_W2, d_gain, N, D, H, dtype)
    d_dgain, d_g = cuda.device_array(D, dtype=dtype), cuda.device_array(N * D, dtype=dtype)
    d_dz, d_dh = cuda.device_array(N * H, dtype=dtype), cuda.device_array(N * D, dtype=dtype)
    d_dW1, d_dW2 = cuda.device_array(D * H, dtype=dtype), cuda.device_array(H * D, dtype=dtype)
    gain_grad_kernel[_blocks(D), THREADS](d_dout, d_f, d_dgain, N, D, zero)
    scale_rows_kernel[_blocks(N * D), THREADS](d_dout, d_gain, d_g, N, D)
    hidden_backward_kernel[_blocks(N * H), THREADS](d_g, d_a, d_W2, d_dz, N, D, H, zero)
    input_backward_kernel[_blocks(N * D), THREADS](d_dout, d_dz, d_W1, d_dh, N, D, H, dtype.type(1))
    weight_grad_kernel[_blocks(D * H), THREADS](d_h, d_dz, d_dW1, N, D, H, zero)
    weight_grad_kernel[_blocks(H * D), THREADS](d_a, d_g, d_dW2, N, H, D, zero)
    return (d_dh.copy_to_host().reshape(N, D), d_dW1.copy_to_host().reshape(D, H),
            d_dW2.copy_to_host().reshape(H, D), d_dgain.copy_to_host())


if __name__ == "__main__":  # check against the solution notebook and time: kernels/self_check.py
    import sys
    from backprop_traps.kernels.self_check import main
    sys.exit(main("training_symptoms"))
