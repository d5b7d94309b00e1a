"""Benchmark cases for kernels/reparameterisation.py, in the form of benchmarks/kernel_cases.py.

``cases(tiny, dtype, rng)`` returns two ``Case`` objects: the fused Gumbel-softmax forward
(reads logits and gumbel, writes y) and the fused backward (reads dy and y, writes dlogits),
one launch each. TINY keeps a simulated launch near 100 threads; LARGE moves 384 MB per op
in fp32 (three 128 MB arrays). PyTorch's counterparts: ``softmax((logits + gumbel) / tau)``
(two elementwise ops and the softmax, as a framework runs them unfused) and the op autograd
calls for softmax's backward, ``_softmax_backward_data``, then the division by tau. Shape
letters as in the kernel module: N rows, K categories.
"""
from __future__ import annotations

import numpy as np

from benchmarks.kernel_cases import Case, on_torch

TINY = (3, 37)         # N, K
LARGE = (8192, 4096)   # N, K: 128 MB per (N, K) array in fp32
TAU = 0.5


def cases(tiny: bool, dtype, rng) -> list:
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import reparameterisation as rp
    ref = load_solution("reparameterisation")
    dtype = np.dtype(dtype)
    N, K = TINY if tiny else LARGE
    logits = (rng.uniform(-2, 2, size=(N, 1)) + 2 * rng.standard_normal((N, K))).astype(dtype)  # N, K
    gumbel = rng.gumbel(size=(N, K)).astype(dtype)                                               # N, K
    dy = rng.standard_normal((N, K)).astype(dtype)                                               # N, K
    logits64, gumbel64, dy64 = (a.astype(np.float64) for a in (logits, gumbel, dy))
    y64 = ref.gumbel_softmax_forward(logits64, gumbel64, TAU)                                    # N, K
    d_logits, d_gumbel, d_dy, d_y_in = (cuda.to_device(a) for a in (logits, gumbel, dy, y64.astype(dtype)))
    y, dlogits = (cuda.device_array((N, K), dtype=dtype) for _ in range(2))
    tpb = rp.THREADS_PER_BLOCK
    forward, backward = rp.forward_kernel(tpb, dtype), rp.backward_kernel(tpb, dtype)
    inv_tau = dtype.type(1.0 / TAU)

    def torch_gumbel_softmax(device):
        import torch
        logits_t, gumbel_t, dy_t, y_t = on_torch(device, logits, gumbel, dy, y64.astype(dtype))

        def forward_t():
            return {"y": torch.softmax((logits_t + gumbel_t) / TAU, dim=1)}

        def backward_t():
            dh = torch.ops.aten._softmax_backward_data(dy_t, y_t, 1, y_t.dtype)
            return {"dlogits": dh / TAU}
        return {"forward": forward_t, "backward": backward_t}

    return [
        Case(f"gumbel-softmax forward, fused online softmax (K={K})",
             {"logits": d_logits, "gumbel": d_gumbel}, {"y": y},
             lambda: forward[N, tpb](d_logits, d_gumbel, inv_tau, y),
             lambda: {"y": y64},
             lambda dev: torch_gumbel_softmax(dev)["forward"]),
        Case(f"gumbel-softmax backward, fused row reduction (K={K})",
             {"dy": d_dy, "y": d_y_in}, {"dlogits": dlogits},
             lambda: backward[N, tpb](d_dy, d_y_in, inv_tau, dlogits),
             lambda: {"dlogits": ref.gumbel_softmax_backward(dy64, y64, TAU)},
             lambda dev: torch_gumbel_softmax(dev)["backward"]),
    ]
