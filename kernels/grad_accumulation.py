"""Gradient accumulation in Numba CUDA: each micro-batch's gradient added in place into buffers.

The model is question 05's MLP (params = (W1, b1, W2, b2)). For micro-batch k (rows x_k, y_k,
n_k of them, out of N in the whole batch), one step is:

  forward   1. linear_relu_forward_kernel (kernels/vram_trap.py): h = relu(x_k @ W1 + b1) and a
               1-bit mask of z > 0, never the float z.
            2. linear_forward_kernel (vram_trap): out = h @ W2 + b2.
  loss      3. mse_loss_backward_kernel (vram_trap) with inv_n = 1 / N, the WHOLE batch's size:
               dout = (out - y_k) / N, so this micro-batch's gradient arrives already weighted
               by n_k / N (its mean gradient times its share of the rows). No 1 / K anywhere.
  backward  4. vram_trap's two-stage weight gradient, its second stage adding into the
               buffers: dW2_buf += h.T @ dout, db2_buf += sum_n dout.
            5. linear_backward_input_kernel (vram_trap): dh = dout @ W2.T.
            6. kernel 4 again: dW1_buf += x_k.T @ dz, db1_buf += sum_n dz, with dz = dh gated
               by the mask bit as it is read (never stored).

Kernel 4 is vram_trap's weight gradient (4a: partial sums over parts of the micro-batch's rows,
threads along the contiguous j axis; 4b: one thread per entry adds the parts) with
``accumulate``: 4b adds into the buffer, ``buf[i, j] +=``, instead of writing a fresh array.
Each entry has exactly one writer, so there are no atomics and the sum is the same on every
run. The partial sums are kept in the buffer's dtype, so a float32 micro-batch can
accumulate into float64.

Version 2 (kernels/grad_accumulation_v2.py): the same six steps on kernels/vram_trap_v2.py's
tiled products (64 x 64 tiles through shared memory, 4 x 4 a thread in registers; issue 34
measured this version 1 at 0.10x PyTorch) and its warp-per-row loss gradient, fused.

The unfused way, for comparison (``fused=False``): the same kernel 4 writes the micro-batch's
gradient into a scratch array, then accumulate_kernel adds it into the buffer elementwise.
Fusing saves one write and one read of a gradient-sized array per micro-batch, and the
scratch array itself. (Before, the fused kernel was one block per entry with threads striding
over rows: reads with a stride of a whole row between neighbouring threads, so "fused" was
likely the slower of the two.)

Shape letters: N rows in the batch, m = micro_batch, n_k rows in micro-batch k (n_k <= m),
D_in, H, D_out the layer widths; x (N, D_in), y (N, D_out), h and dh (n_k, H), out and dout
(n_k, D_out), mask uint8 (ceil(n_k * H / 8),). TPB = threads per block, a power of two.

Run: the host functions at the bottom take and return numpy arrays. Without a GPU set
NUMBA_ENABLE_CUDASIM=1 before numba is imported (tests/conftest.py does):
    python -m pytest tests/kernels/test_grad_accumulation_kernels.py
on a GPU, BACKPROP_TRAPS_REAL_GPU=1. These are plain loops written to be read, a reference for
the accumulation, not a fast GEMM.

Check and time it: python -m backprop_traps.kernels.grad_accumulation (from any folder) runs these kernels on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.grad_accumulation: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.vram_trap import (THREADS_PER_BLOCK as ELEMENTWISE_TPB, backward_input, backward_params,
                                              linear_forward_device, linear_relu_forward_device,
                                              mse_loss_backward_device, partials_shape)

THREADS_PER_BLOCK = 128  # kernels 4 and 6: threads along a weight row, at most


# ---------------------------------------------------------------- the unfused way's add

@cuda.jit
def accumulate_kernel(buffer, grad):
    """buffer += grad elementwise, in place (1-D views): the unfused way's second launch."""
    f = cuda.grid(1)
    if f < buffer.size:
        buffer[f] += grad[f]


# ---------------------------------------------------------------- host side: device arrays in, out

def accumulate_device(d_buffer, d_grad):
    """accumulate_kernel on 1-D views: d_buffer += d_grad, one thread per element."""
    blocks = max(1, math.ceil(d_buffer.size / ELEMENTWISE_TPB))
    accumulate_kernel[blocks, ELEMENTWISE_TPB](d_buffer.reshape(d_buffer.size), d_grad.reshape(d_grad.size))


def workspace(micro_batch, params, dtype, buffer_dtype=None):
    """The device scratch one micro-batch needs, allocated once for micro-batches of up to
    ``micro_batch`` rows (a shorter last one uses the first rows of each array); the partial
    sums of kernels 4 and 6 are in ``buffer_dtype`` (default: ``dtype``)."""
    d_in, hidden = params[0].shape
    d_out = params[2].shape[1]
    m = micro_batch
    acc = np.dtype(buffer_dtype or dtype)
    return {"h": cuda.device_array((m, hidden), dtype), "dh": cuda.device_array((m, hidden), dtype),
            "mask": cuda.device_array(math.ceil(m * hidden / 8), np.uint8),
            "out": cuda.device_array((m, d_out), dtype), "dout": cuda.device_array((m, d_out), dtype),
            "row_sq": cuda.device_array(m, dtype), "no_mask": cuda.device_array(1, np.uint8),
            "scratch": [cuda.device_array(p.shape, dtype) for p in params],
            "partials": [cuda.device_array(partials_shape(m, d_in, hidden), acc),
                         cuda.device_array(partials_shape(m, hidden, d_out), acc)]}


def layer_partials(ws, index, d_input, d_dW):
    """Layer ``index``'s partial sums from the workspace, or None (sized by the launcher) for
    buffers of another dtype or a shorter last micro-batch."""
    partials = ws["partials"][index // 2]
    if partials.dtype != d_dW.dtype or partials.shape[0] != partials_shape(d_input.shape[0], 1, 1)[0]:
        return None
    return partials


def _accumulate_layer(d_up, d_mask, relu, d_input, d_dW, d_db, zero, ws, index, fused, tpb):
    """d_dW += d_input.T @ dz and d_db += sum_n dz (dz = d_up, gated by the mask when relu)."""
    partials = layer_partials(ws, index, d_input, d_dW)
    if fused:  # the parts' sums are added straight into the buffers
        backward_params(d_up, d_mask, relu, d_input, d_dW, d_db, zero, True, partials, tpb)
        return
    s_dW, s_db = ws["scratch"][index], ws["scratch"][index + 1]
    backward_params(d_up, d_mask, relu, d_input, s_dW, s_db, zero, False, None, tpb)
    for buffer, grad in ((d_dW, s_dW), (d_db, s_db)):
        accumulate_device(buffer, grad)


def accumulate_micro_batch_dev(d_params, d_x, d_y, d_buffers, inv_n, ws, fused=True,
                               threads_per_block=THREADS_PER_BLOCK):
    """Kernels 1 to 6 on one micro-batch (device arrays): its gradient, weighted by n_k / N
    through ``inv_n = 1 / N``, added into ``d_buffers`` = [dW1, db1, dW2, db2] in place. No
    allocation: the scratch comes from ``workspace``."""
    d_W1, d_b1, d_W2, d_b2 = d_params
    n_k, hidden = d_x.shape[0], d_W1.shape[1]
    zero = d_x.dtype.type(0)
    d_h, d_dh, d_out, d_dout = ws["h"][:n_k], ws["dh"][:n_k], ws["out"][:n_k], ws["dout"][:n_k]
    d_mask = ws["mask"][:math.ceil(n_k * hidden / 8)]
    linear_relu_forward_device(d_x, d_W1, d_b1, d_h, d_mask)
    linear_forward_device(d_h, d_W2, d_b2, d_out)
    mse_loss_backward_device(d_out, d_y, d_dout, ws["row_sq"][:n_k], inv_n)
    _accumulate_layer(d_dout, ws["no_mask"], False, d_h, d_buffers[2], d_buffers[3], zero, ws, 2, fused,
                      threads_per_block)
    backward_input(d_dout, ws["no_mask"], False, d_W2, d_dh, zero)
    _accumulate_layer(d_dh, d_mask, True, d_x, d_buffers[0], d_buffers[1], zero, ws, 0, fused,
                      threads_per_block)


# ---------------------------------------------------------------- host functions: numpy in, out

def accumulated_grads(params, x, y, micro_batch, buffer_dtype=np.float64, fused=True,
                      threads_per_block=THREADS_PER_BLOCK, step=None):
    """As the solution's accumulated_grads: (dW1, db1, dW2, db2) of the whole batch's mean loss,
    micro-batch by micro-batch, in ``buffer_dtype`` buffers zeroed once. The micro-batches run
    in x's dtype, through ``step`` (version 2's ``accumulate_micro_batch_dev`` calls this with
    its own; None: this module's, with ``fused`` and ``threads_per_block``)."""
    n = x.shape[0]
    m = min(micro_batch, n)
    d_params = [cuda.to_device(np.ascontiguousarray(p, dtype=x.dtype)) for p in params]
    d_x, d_y = cuda.to_device(np.ascontiguousarray(x)), cuda.to_device(np.ascontiguousarray(y, dtype=x.dtype))
    d_buffers = [cuda.to_device(np.zeros(p.shape, dtype=buffer_dtype)) for p in params]  # zeroed once
    ws = workspace(m, params, x.dtype)
    for start in range(0, n, m):
        stop = min(start + m, n)
        if step is None:
            accumulate_micro_batch_dev(d_params, d_x[start:stop], d_y[start:stop], d_buffers, 1.0 / n, ws,
                                       fused, threads_per_block)
        else:
            step(d_params, d_x[start:stop], d_y[start:stop], d_buffers, 1.0 / n, ws)
    return tuple(d.copy_to_host() for d in d_buffers)


def mlp_grads(params, x, y, threads_per_block=THREADS_PER_BLOCK):
    """As the solution's mlp_grads: one micro-batch holding the whole batch."""
    return accumulated_grads(params, x, y, x.shape[0], np.dtype(x.dtype), True, threads_per_block)


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("grad_accumulation"))
