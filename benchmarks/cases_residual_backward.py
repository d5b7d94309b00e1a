"""Benchmark cases for kernels/residual_backward.py, in the form of benchmarks/kernel_cases.py.

``cases(tiny, dtype, rng)`` returns three ``Case`` objects: one residual block's forward
(kernels 1 and 2: a = relu(h @ W1), h' = h + a @ W2), its backward from the gradient at its
output (kernels 3, 4 and 5: dz, dh with the identity added, dW1 and dW2), and the per-layer
gradient norms of a whole stack's dhs (kernel 6, one block per layer). The kernels are plain
loops, written to be read: the block's products are naive matrix products, so their times are
compared with PyTorch's cuBLAS products for scale, not for parity. TINY keeps a simulated
launch near 50 threads; LARGE is a block of N = 8192 rows, D = 512, H = 2048 (16 MB per (N, D)
fp32 array, 64 MB per (N, H)), and the norms of 9 layers of (N, D). PyTorch's counterparts:
``torch.relu(h @ W1) @ W2 + h``, autograd through it (which re-runs the forward: its time
includes one), and ``linalg.vector_norm`` over each layer. Shape letters as in the kernel module.
"""
from __future__ import annotations

import numpy as np

from benchmarks.kernel_cases import Case, on_torch

TINY = (3, 4, 6, 8)          # L, N, D, H
LARGE = (8, 8192, 512, 2048)


def cases(tiny: bool, dtype, rng) -> list:
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import residual_backward as rb
    ref = load_solution("residual_backward")
    dtype = np.dtype(dtype)
    L, N, D, H = TINY if tiny else LARGE
    h = rng.standard_normal((N, D)).astype(dtype)                                  # N, D
    W1 = (rng.standard_normal((D, H)) * np.sqrt(2.0 / D)).astype(dtype)            # D, H
    W2 = (rng.standard_normal((H, D)) * np.sqrt(1.0 / H) * 0.5).astype(dtype)      # H, D
    g = rng.standard_normal((N, D)).astype(dtype)                                  # N, D
    dhs = rng.standard_normal((L + 1, N, D)).astype(dtype)                         # L + 1, N, D
    h64, W1_64, W2_64, g64 = (a.astype(np.float64) for a in (h, W1, W2, g))
    d_h, d_W1, d_W2, d_g = (cuda.to_device(a.ravel()) for a in (h, W1, W2, g))
    d_a, d_out = cuda.device_array(N * H, dtype=dtype), cuda.device_array(N * D, dtype=dtype)
    d_dz, d_dh = cuda.device_array(N * H, dtype=dtype), cuda.device_array(N * D, dtype=dtype)
    d_dW1, d_dW2 = cuda.device_array(D * H, dtype=dtype), cuda.device_array(H * D, dtype=dtype)
    d_dhs, d_sums = cuda.to_device(dhs.ravel()), cuda.device_array(L + 1, dtype=dtype)
    zero, one = dtype.type(0), dtype.type(1)
    a_ref = np.maximum(h64 @ W1_64, 0.0)
    rb.hidden_forward_kernel[rb._blocks(N * H), rb.THREADS](d_h, d_W1, d_a, N, D, H, zero)  # the backward reads a

    def forward():
        rb.hidden_forward_kernel[rb._blocks(N * H), rb.THREADS](d_h, d_W1, d_a, N, D, H, zero)
        rb.output_forward_kernel[rb._blocks(N * D), rb.THREADS](d_h, d_a, d_W2, d_out, N, D, H, one)

    def backward():
        rb.hidden_backward_kernel[rb._blocks(N * H), rb.THREADS](d_g, d_a, d_W2, d_dz, N, D, H, zero)
        rb.input_backward_kernel[rb._blocks(N * D), rb.THREADS](d_g, d_dz, d_W1, d_dh, N, D, H, one)
        rb.weight_grad_kernel[rb._blocks(D * H), rb.THREADS](d_h, d_dz, d_dW1, N, D, H, zero)
        rb.weight_grad_kernel[rb._blocks(H * D), rb.THREADS](d_a, d_g, d_dW2, N, H, D, zero)

    def norms():
        rb.layer_sum_squares_kernel(dtype)[L + 1, rb.REDUCE_THREADS](d_dhs, N * D, d_sums)

    def expected_forward():
        return {"a": a_ref.ravel(), "out": ref.residual_forward(h64, [(W1_64, W2_64)], True)[1].ravel()}

    def expected_backward():
        dhs_ref, grads = ref.residual_backward(g64, ref.residual_forward(h64, [(W1_64, W2_64)], True),
                                               [(W1_64, W2_64)], True)
        return {"dh": dhs_ref[0].ravel(), "dW1": grads[0][0].ravel(), "dW2": grads[0][1].ravel()}

    def expected_norms():
        return {"sums": np.sum(dhs.astype(np.float64) ** 2, axis=(1, 2))}

    def torch_block(device):
        import torch
        h_t, W1_t, W2_t, g_t = on_torch(device, h, W1, W2, g)

        def forward_t():
            a_t = torch.relu(h_t @ W1_t)
            return {"a": a_t.reshape(-1), "out": (h_t + a_t @ W2_t).reshape(-1)}

        def backward_t():
            leaves = [t.detach().clone().requires_grad_() for t in (h_t, W1_t, W2_t)]
            (leaves[0] + torch.relu(leaves[0] @ leaves[1]) @ leaves[2]).backward(g_t)
            return {"dh": leaves[0].grad.reshape(-1), "dW1": leaves[1].grad.reshape(-1),
                    "dW2": leaves[2].grad.reshape(-1)}
        return {"forward": forward_t, "backward": backward_t}

    def torch_norms(device):
        import torch
        (dhs_t,) = on_torch(device, dhs)
        return lambda: {"sums": torch.linalg.vector_norm(dhs_t, dim=(1, 2)) ** 2}

    cfg = f"N={N}, D={D}, H={H}"
    return [
        Case(f"residual block forward, relu(h W1) W2 + h ({cfg})", {"h": d_h, "W1": d_W1, "W2": d_W2},
             {"a": d_a, "out": d_out}, forward, expected_forward, lambda dev: torch_block(dev)["forward"],
             4 * N * D * H),
        Case(f"residual block backward, identity added once ({cfg})",
             {"g": d_g, "h": d_h, "a": d_a, "W1": d_W1, "W2": d_W2},
             {"dz": d_dz, "dh": d_dh, "dW1": d_dW1, "dW2": d_dW2}, backward, expected_backward,
             lambda dev: torch_block(dev)["backward"], 8 * N * D * H),
        Case(f"per-layer gradient norms, one block per layer (L+1={L + 1}, {N}x{D} each)", {"dhs": d_dhs},
             {"sums": d_sums}, norms, expected_norms, torch_norms),
    ]
