"""Benchmark cases for kernels/layernorm_backward.py, in the form of benchmarks/kernel_cases.py.

``cases(tiny, dtype, rng)`` returns two ``Case`` objects: the fused forward (one launch) and
the backward (the fused one-pass kernel, then the per-feature sums of its partials). TINY
keeps a simulated launch near 100 threads; LARGE moves 256 MB (forward) and 384 MB
(backward) in fp32, GPT-sized rows (D = 1024). The partial sums (2 G D values, 4 MB at
LARGE) are scratch: they are not counted in the bytes the op must move. PyTorch's
counterparts are the ops its autograd calls, ``native_layer_norm`` and
``native_layer_norm_backward``. Shape letters as in the kernel module: N rows, D features.
"""
from __future__ import annotations

import numpy as np

from benchmarks.kernel_cases import Case, on_torch

TINY = (3, 37)        # N, D
LARGE = (32768, 1024)  # N, D: 128 MB per (N, D) array in fp32
EPS = 1e-5


def cases(tiny: bool, dtype, rng) -> list:
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import layernorm_backward as ln
    ref = load_solution("layernorm_backward")
    dtype = np.dtype(dtype)
    N, D = TINY if tiny else LARGE
    x = (rng.uniform(-3, 3, size=(N, 1)) + rng.standard_normal((N, D))).astype(dtype)  # N, D
    gamma, beta = (rng.standard_normal(D).astype(dtype) for _ in range(2))            # D
    dy = rng.standard_normal((N, D)).astype(dtype)                                      # N, D
    x64, gamma64, beta64, dy64 = (a.astype(np.float64) for a in (x, gamma, beta, dy))
    _, mean64, rstd64 = ref.layernorm_forward(x64, gamma64, beta64, EPS)               # N
    d_x, d_gamma, d_beta, d_dy = (cuda.to_device(a) for a in (x, gamma, beta, dy))
    d_mean, d_rstd = (cuda.to_device(a.astype(dtype)) for a in (mean64, rstd64))
    y, dx = (cuda.device_array((N, D), dtype=dtype) for _ in range(2))
    mean, rstd = (cuda.device_array(N, dtype=dtype) for _ in range(2))
    dgamma, dbeta = (cuda.device_array(D, dtype=dtype) for _ in range(2))
    tpb, g = ln.THREADS_PER_BLOCK, ln.backward_blocks(N)
    partials = cuda.device_array((2, g, D), dtype=dtype)
    forward, backward = ln.forward_kernel(tpb, dtype), ln.backward_kernel(tpb, dtype)
    eps, n_features = dtype.type(EPS), dtype.type(D)

    def launch_backward():
        backward[g, tpb](d_dy, d_x, d_gamma, d_mean, d_rstd, n_features, dx, partials)
        ln.param_sum_kernel[ln.param_launch(D)](partials, dgamma, dbeta)

    def torch_layernorm(device):
        import torch
        x_t, gamma_t, beta_t, dy_t, mean_t, rstd_t = on_torch(
            device, x, gamma, beta, dy, mean64.astype(dtype), rstd64.astype(dtype))

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
             lambda: forward[N, tpb](d_x, d_gamma, d_beta, eps, n_features, y, mean, rstd),
             lambda: dict(zip(("y", "mean", "rstd"), ref.layernorm_forward(x64, gamma64, beta64, EPS))),
             lambda dev: torch_layernorm(dev)["forward"]),
        Case(f"layernorm backward, fused one-pass + param sums (D={D})",
             {"dy": d_dy, "x": d_x, "gamma": d_gamma, "mean": d_mean, "rstd": d_rstd},
             {"dx": dx, "dgamma": dgamma, "dbeta": dbeta}, launch_backward,
             lambda: dict(zip(("dx", "dgamma", "dbeta"),
                              ref.layernorm_backward(dy64, x64, gamma64, mean64, rstd64))),
             lambda dev: torch_layernorm(dev)["backward"]),
    ]
