"""Gradient accumulation, version 2: the same six steps on tiled products (issue 34).

Version 1 (kernels/grad_accumulation.py) is the one to read first: question 05's MLP, each
micro-batch's gradient added in place into the buffers, the loss weighted by the whole batch's
size, one writer per entry (no atomics). What changed: the products are kernels/vram_trap_v2.py's
(64 x 64 tiles through shared memory, 4 x 4 a thread in registers; issue 34 measured version 1
at 0.10x PyTorch), the loss gradient a warp per row, and the weight gradient always fused: its
tiled parts are added into the buffers by vram_trap's kernel 4b. It needs a hidden width of at
most 64 or a multiple of 8 (the mask is packed a block at a time).

  forward   1. vram_trap_v2.linear_relu_forward_kernel: h = relu(x_k @ W1 + b1), the 1-bit mask.
            2. vram_trap_v2.linear_forward_kernel: out = h @ W2 + b2.
  loss      3. vram_trap_v2.mse_loss_backward_kernel with inv_n = 1 / N.
  backward  4. vram_trap_v2's weight gradient, added into dW2_buf and db2_buf.
            5. vram_trap_v2.linear_backward_input_kernel: dh = dout @ W2.T.
            6. kernel 4 again into dW1_buf and db1_buf, dz = dh gated by the mask as it is read.

The scratch is version 1's ``workspace``; ``accumulated_grads`` is version 1's on this
module's micro-batch step. Shapes as version 1. Tests (both versions):
    python -m pytest tests/kernels/test_grad_accumulation_kernels.py
"""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.kernels import grad_accumulation as v1, vram_trap_v2 as v2


def accumulate_micro_batch_dev(d_params, d_x, d_y, d_buffers, inv_n, ws):
    """Kernels 1 to 6 on one micro-batch, tiled: its gradient, weighted by n_k / N through
    ``inv_n = 1 / N``, added into ``d_buffers`` = [dW1, db1, dW2, db2] in place, the scratch
    from version 1's ``workspace``."""
    d_W1, d_b1, d_W2, d_b2 = d_params
    n_k, hidden = d_x.shape[0], d_W1.shape[1]
    d_h, d_dh, d_out, d_dout = ws["h"][:n_k], ws["dh"][:n_k], ws["out"][:n_k], ws["dout"][:n_k]
    d_mask = ws["mask"][:math.ceil(n_k * hidden / 8)]
    v2.linear_relu_forward_device(d_x, d_W1, d_b1, d_h, d_mask)
    v2.linear_forward_device(d_h, d_W2, d_b2, d_out)
    v2.mse_loss_backward_device(d_out, d_y, d_dout, ws["row_sq"][:n_k], inv_n)
    v2.backward_params(d_dout, ws["no_mask"], False, d_h, d_buffers[2], d_buffers[3], True,
                       v1.layer_partials(ws, 2, d_h, d_buffers[2]))
    v2.backward_input(d_dout, ws["no_mask"], False, d_W2, d_dh)
    v2.backward_params(d_dh, d_mask, True, d_x, d_buffers[0], d_buffers[1], True,
                       v1.layer_partials(ws, 0, d_x, d_buffers[0]))


def accumulated_grads(params, x, y, micro_batch, buffer_dtype=np.float64):
    """As version 1's (the solution's accumulated_grads), on the tiled kernels."""
    return v1.accumulated_grads(params, x, y, micro_batch, buffer_dtype, step=accumulate_micro_batch_dev)
