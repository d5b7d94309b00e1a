"""Cases for kernels/layernorm_backward.py: the fused forward (one launch) and the backward
(the fused one-pass kernel, then the per-feature sums of its partials).

TINY keeps a simulated launch near 100 threads; LARGE moves 256 MB (forward) and 384 MB
(backward) in fp32, GPT-sized rows (D = 1024); HUGE fills an 80 GB GPU with such rows. The
partial sums (2 G D values, 4 MB at LARGE) are scratch: they are not counted in the bytes
the op must move. PyTorch's counterparts are the ops its autograd calls,
``native_layer_norm`` and ``native_layer_norm_backward``. Shape letters: N rows, D features.
Version 2 (kernels/layernorm_backward_v2.py: 4 features a thread in registers, 128-bit loads,
warp-shuffle sums) has a case per op beside version 1's, on the same arrays; it takes D a
multiple of 4, so TINY's D is 36.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (3, 36)          # N, D
LARGE = (32768, 1024)   # 128 MB per (N, D) array in fp32
HUGE = ((4_800_000, 1024),)
EPS = 1e-5


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import layernorm_backward as ln, layernorm_backward_v2 as ln2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("layernorm_backward")
    N, D = shape

    def fill(rng):
        x = (rng.uniform(-3, 3, size=(N, 1)) + rng.standard_normal((N, D))).astype(dtype)
        gamma, beta = (rng.standard_normal(D).astype(dtype) for _ in range(2))
        dy = rng.standard_normal((N, D)).astype(dtype)
        _, mean, rstd = ref.layernorm_forward(*(a.astype(np.float64) for a in (x, gamma, beta)), EPS)
        return {"x": x, "gamma": gamma, "beta": beta, "dy": dy, "mean": mean, "rstd": rstd}

    host = arrays.make({"x": ((N, D), dtype), "gamma": (D, dtype), "beta": (D, dtype), "dy": ((N, D), dtype),
                        "mean": (N, np.float64), "rstd": (N, np.float64)}, fill)
    x, gamma, beta, dy = host.x, host.gamma, host.beta, host.dy
    d_x, d_gamma, d_beta, d_dy = (cuda.to_device(a) for a in (x, gamma, beta, dy))
    d_mean, d_rstd = (cuda.to_device(a.astype(dtype)) for a in (host.mean, host.rstd))
    y, dx = (cuda.device_array((N, D), dtype=dtype) for _ in range(2))
    mean, rstd = (cuda.device_array(N, dtype=dtype) for _ in range(2))
    dgamma, dbeta = (cuda.device_array(D, dtype=dtype) for _ in range(2))
    partials = cuda.device_array((2, ln.backward_blocks(N), D), dtype=dtype)
    partials_v2 = cuda.device_array((2, ln2.backward_blocks(N), D), dtype=dtype)
    as64 = lambda *a: [v.astype(np.float64) for v in a]

    def torch_layernorm(device):
        import torch
        x_t, gamma_t, beta_t, dy_t, mean_t, rstd_t = on_torch(
            device, x, gamma, beta, dy, host.mean.astype(dtype), host.rstd.astype(dtype))

        def forward_t():
            y_t, m_t, r_t = torch.ops.aten.native_layer_norm(x_t, [D], gamma_t, beta_t, EPS)
            return {"y": y_t, "mean": m_t.reshape(-1), "rstd": r_t.reshape(-1)}

        def backward_t():
            dx_t, dgamma_t, dbeta_t = torch.ops.aten.native_layer_norm_backward(
                dy_t, x_t, [D], mean_t.reshape(N, 1), rstd_t.reshape(N, 1), gamma_t, beta_t,
                [True, True, True])
            return {"dx": dx_t, "dgamma": dgamma_t, "dbeta": dbeta_t}
        return {"forward": forward_t, "backward": backward_t}

    return [
        Case(f"layernorm forward, fused Welford (D={D})",
             {"x": d_x, "gamma": d_gamma, "beta": d_beta}, {"y": y, "mean": mean, "rstd": rstd},
             lambda: ln.forward_device(d_x, d_gamma, d_beta, EPS, y, mean, rstd),
             lambda: dict(zip(("y", "mean", "rstd"), ref.layernorm_forward(*as64(x, gamma, beta), EPS))),
             lambda dev: torch_layernorm(dev)["forward"]),
        Case(f"layernorm backward, fused one-pass + param sums (D={D})",
             {"dy": d_dy, "x": d_x, "gamma": d_gamma, "mean": d_mean, "rstd": d_rstd},
             {"dx": dx, "dgamma": dgamma, "dbeta": dbeta},
             lambda: ln.backward_device(d_dy, d_x, d_gamma, d_mean, d_rstd, dx, partials, dgamma, dbeta),
             lambda: dict(zip(("dx", "dgamma", "dbeta"),
                              ref.layernorm_backward(*as64(dy, x, gamma), host.mean, host.rstd))),
             lambda dev: torch_layernorm(dev)["backward"]),
        Case(f"layernorm forward, v2: a row in registers, 128-bit loads, warp shuffles (D={D})",
             {"x": d_x, "gamma": d_gamma, "beta": d_beta}, {"y": y, "mean": mean, "rstd": rstd},
             lambda: ln2.forward_device(d_x, d_gamma, d_beta, EPS, y, mean, rstd),
             lambda: dict(zip(("y", "mean", "rstd"), ref.layernorm_forward(*as64(x, gamma, beta), EPS))),
             lambda dev: torch_layernorm(dev)["forward"]),
        Case(f"layernorm backward, v2: a row in registers, partials kept in registers (D={D})",
             {"dy": d_dy, "x": d_x, "gamma": d_gamma, "mean": d_mean, "rstd": d_rstd},
             {"dx": dx, "dgamma": dgamma, "dbeta": dbeta},
             lambda: ln2.backward_device(d_dy, d_x, d_gamma, d_mean, d_rstd, dx, partials_v2, dgamma, dbeta),
             lambda: dict(zip(("dx", "dgamma", "dbeta"),
                              ref.layernorm_backward(*as64(dy, x, gamma), host.mean, host.rstd))),
             lambda dev: torch_layernorm(dev)["backward"]),
    ]
