"""Cases for kernels/reparameterisation.py: the fused Gumbel-softmax forward (reads logits and
gumbel, writes y) and the fused backward (reads dy and y, writes dlogits), one launch each.

TINY keeps a simulated launch near 100 threads; LARGE moves 384 MB per op in fp32 (three
128 MB arrays); HUGE fills an 80 GB GPU with rows of 4,096 categories, and with rows of one
(3.3e9 rows: past CUDA's 2**31 - 1 blocks). PyTorch's counterparts: ``softmax((logits +
gumbel) / tau)`` (two elementwise ops and the softmax, as a framework runs them unfused) and
the op autograd calls for softmax's backward, ``_softmax_backward_data``, then the division
by tau. Shape letters as in the kernel module: N rows, K categories.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (3, 37)         # N, K
LARGE = (8192, 4096)   # 128 MB per (N, K) array in fp32
HUGE = ((800_000, 4096), (3_200_000_000, 1))
TAU = 0.5


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import reparameterisation as rp
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("reparameterisation")
    N, K = shape

    def fill(rng):
        logits = (rng.uniform(-2, 2, size=(N, 1)) + 2 * rng.standard_normal((N, K))).astype(dtype)  # N, K
        gumbel = rng.gumbel(size=(N, K)).astype(dtype)                                               # N, K
        dy = rng.standard_normal((N, K)).astype(dtype)                                               # N, K
        y64 = ref.gumbel_softmax_forward(logits.astype(np.float64), gumbel.astype(np.float64), TAU)
        return {"logits": logits, "gumbel": gumbel, "dy": dy, "y64": y64}

    host = arrays.make({"logits": ((N, K), dtype), "gumbel": ((N, K), dtype), "dy": ((N, K), dtype),
                        "y64": ((N, K), np.float64)}, fill)
    logits, gumbel, dy, y64 = host.logits, host.gumbel, host.dy, host.y64
    d_logits, d_gumbel, d_dy, d_y_in = (cuda.to_device(a) for a in (logits, gumbel, dy, y64.astype(dtype)))
    y, dlogits = (cuda.device_array((N, K), dtype=dtype) for _ in range(2))

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
             lambda: rp.forward_device(d_logits, d_gumbel, TAU, y),
             lambda: {"y": y64},
             lambda dev: torch_gumbel_softmax(dev)["forward"]),
        Case(f"gumbel-softmax backward, fused row reduction (K={K})",
             {"dy": d_dy, "y": d_y_in}, {"dlogits": dlogits},
             lambda: rp.backward_device(d_dy, d_y_in, TAU, dlogits),
             lambda: {"dlogits": ref.gumbel_softmax_backward(dy.astype(np.float64), y64, TAU)},
             lambda dev: torch_gumbel_softmax(dev)["backward"]),
    ]
