"""Cases for kernels/residual_backward.py: one residual block's forward (kernels 1 and 2:
a = relu(h @ W1), h' = h + a @ W2), its backward from the gradient at its output (kernels 3,
4 and 5: dz, dh with the identity added once, dW1 and dW2), and the per-layer gradient norms
of a whole stack's dhs (kernel 6, one block per layer).

The kernels are plain loops, written to be read: the block's products are naive matrix
products, so flops say more than bytes and their times compare with PyTorch's cuBLAS products
for scale, not parity. TINY keeps a simulated launch near 50 threads; LARGE is a block of
N = 8192 rows, D = 512, H = 2048 (16 MB per (N, D) fp32 array, 64 MB per (N, H)), and the
norms of 9 layers of (N, D). HUGE fills an 80 GB GPU three ways: with rows, with hidden
units (W1 and W2 of 1.2 GB each), and with layers for the norms (3,600 layers: grid x). The
backward reads the forward's a, made on the host beforehand. PyTorch's counterparts:
``torch.relu(h @ W1) @ W2 + h``, autograd through it (which re-runs the forward: its time
includes one), and ``linalg.vector_norm`` over each layer. Shape letters as in the kernel
module: L blocks, N rows, D features, H hidden units. Version 2 (kernels/residual_backward_v2.py:
tiled products with their epilogues, split-K weight gradients, the norms in two stages with
128-bit loads) has a case per op beside version 1's, on the same arrays; its scratch (split-K's
partials, the norms' (L + 1, G) partials) is made beforehand and not counted as moved bytes.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (3, 4, 6, 8)          # L, N, D, H
LARGE = (8, 8192, 512, 2048)
HUGE = ((8, 1_200_000, 512, 2048), (8, 8192, 512, 600_000), (3_600, 8192, 512, 2048))


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import residual_backward as rb, residual_backward_v2 as rb2
    from backprop_traps.kernels.common import tiled_matmul
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("residual_backward")
    L, N, D, H = shape

    def fill(rng):
        h = rng.standard_normal((N, D)).astype(dtype)                               # N, D
        W1 = (rng.standard_normal((D, H)) * np.sqrt(2.0 / D)).astype(dtype)         # D, H
        W2 = (rng.standard_normal((H, D)) * np.sqrt(1.0 / H) * 0.5).astype(dtype)   # H, D
        a = np.maximum(h.astype(np.float64) @ W1.astype(np.float64), 0.0).astype(dtype)  # N, H: the forward's
        return {"h": h, "W1": W1, "W2": W2, "a": a, "g": rng.standard_normal((N, D)).astype(dtype),
                "dhs": rng.standard_normal((L + 1, N, D)).astype(dtype)}

    host = arrays.make({"h": ((N, D), dtype), "W1": ((D, H), dtype), "W2": ((H, D), dtype), "a": ((N, H), dtype),
                        "g": ((N, D), dtype), "dhs": ((L + 1, N, D), dtype)}, fill)
    h, W1, W2, g, dhs = host.h, host.W1, host.W2, host.g, host.dhs
    d_h, d_W1, d_W2, d_a_saved, d_g, d_dhs = (cuda.to_device(x) for x in (h, W1, W2, host.a, g, dhs))
    d_a, d_dz = (cuda.device_array((N, H), dtype=dtype) for _ in range(2))
    d_out, d_dh = (cuda.device_array((N, D), dtype=dtype) for _ in range(2))
    d_dW1, d_dW2 = cuda.device_array((D, H), dtype=dtype), cuda.device_array((H, D), dtype=dtype)
    d_sums = cuda.device_array(L + 1, dtype=dtype)
    d_parts1, d_parts2 = tiled_matmul.scratch(D, H, N, dtype), tiled_matmul.scratch(H, D, N, dtype)  # v2's split-K
    d_norm_parts = cuda.device_array((L + 1, rb2.norm_blocks(L + 1, N * D)), dtype=dtype)
    as64 = lambda *x: [v.astype(np.float64) for v in x]

    def expected_forward():
        h64, W1_64, W2_64 = as64(h, W1, W2)
        return {"a": np.maximum(h64 @ W1_64, 0.0), "out": ref.residual_forward(h64, [(W1_64, W2_64)], True)[1]}

    def expected_backward():
        g64, h64, W1_64, W2_64 = as64(g, h, W1, W2)
        dhs_ref, grads = ref.residual_backward(g64, ref.residual_forward(h64, [(W1_64, W2_64)], True),
                                               [(W1_64, W2_64)], True)
        return {"dh": dhs_ref[0], "dW1": grads[0][0], "dW2": grads[0][1]}

    def torch_block(device):
        import torch
        h_t, W1_t, W2_t, g_t = on_torch(device, h, W1, W2, g)

        def forward_t():
            a_t = torch.relu(h_t @ W1_t)
            return {"a": a_t, "out": h_t + a_t @ W2_t}

        def backward_t():
            leaves = [t.detach().clone().requires_grad_() for t in (h_t, W1_t, W2_t)]
            (leaves[0] + torch.relu(leaves[0] @ leaves[1]) @ leaves[2]).backward(g_t)
            return {"dh": leaves[0].grad, "dW1": leaves[1].grad, "dW2": leaves[2].grad}
        return {"forward": forward_t, "backward": backward_t}

    def torch_norms(device):
        import torch
        (dhs_t,) = on_torch(device, dhs)
        return lambda: {"sums": torch.linalg.vector_norm(dhs_t, dim=(1, 2)) ** 2}

    def v2_backward():
        rb2.block_backward_device(d_g, d_h, d_a_saved, d_W1, d_W2, True, d_dz, d_dh, d_dW1, d_dW2, d_parts1, d_parts2)

    cfg = f"N={N}, D={D}, H={H}"
    backward_reads = {"g": d_g, "h": d_h, "a": d_a_saved, "W1": d_W1, "W2": d_W2}
    backward_writes = {"dz": d_dz, "dh": d_dh, "dW1": d_dW1, "dW2": d_dW2}
    expected_sums = lambda: {"sums": np.sum(dhs.astype(np.float64) ** 2, axis=(1, 2))}  # noqa: E731
    return [
        Case(f"residual block forward, relu(h W1) W2 + h ({cfg})", {"h": d_h, "W1": d_W1, "W2": d_W2},
             {"a": d_a, "out": d_out}, lambda: rb.block_forward_device(d_h, d_W1, d_W2, True, d_a, d_out),
             expected_forward, lambda dev: torch_block(dev)["forward"], 4 * N * D * H),
        Case(f"residual block backward, identity added once ({cfg})", backward_reads, backward_writes,
             lambda: rb.block_backward_device(d_g, d_h, d_a_saved, d_W1, d_W2, True, d_dz, d_dh, d_dW1, d_dW2),
             expected_backward, lambda dev: torch_block(dev)["backward"], 8 * N * D * H),
        Case(f"per-layer gradient norms, one block per layer (L+1={L + 1}, {N}x{D} each)", {"dhs": d_dhs},
             {"sums": d_sums}, lambda: rb.layer_sum_squares_device(d_dhs, d_sums), expected_sums, torch_norms),
        Case(f"residual block forward, v2: tiled products, ReLU and identity in the epilogues ({cfg})",
             {"h": d_h, "W1": d_W1, "W2": d_W2}, {"a": d_a, "out": d_out},
             lambda: rb2.block_forward_device(d_h, d_W1, d_W2, True, d_a, d_out),
             expected_forward, lambda dev: torch_block(dev)["forward"], 4 * N * D * H),
        Case(f"residual block backward, v2: tiled, W^T and A^T read as they lie, split-K weights ({cfg})",
             backward_reads, backward_writes, v2_backward, expected_backward,
             lambda dev: torch_block(dev)["backward"], 8 * N * D * H),
        Case(f"per-layer gradient norms, v2: G blocks a layer, 128-bit loads, a warp a layer's partials "
             f"(L+1={L + 1}, {N}x{D} each)", {"dhs": d_dhs}, {"sums": d_sums},
             lambda: rb2.layer_sum_squares_device(d_dhs, d_sums, d_norm_parts), expected_sums, torch_norms),
    ]
