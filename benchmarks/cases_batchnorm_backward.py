"""Benchmark cases for kernels/batchnorm_backward.py, in the form of benchmarks/kernel_cases.py.

``cases(tiny, dtype, rng)`` returns two ``Case`` objects: the fused training forward (the
statistics, the running averages and y in one launch) and the fused training backward (the
per-feature sums, which are dgamma and dbeta, then dx, in one launch). TINY keeps a simulated
launch at one block of 256 threads; LARGE is a conv layer's batch as (N*H*W, C) rows, 128 MB
per (N, D) array in fp32. PyTorch's counterparts are the ops its autograd calls,
``native_batch_norm`` and ``native_batch_norm_backward``. Shape letters as in the kernel
module: N examples, D features.
"""
from __future__ import annotations

import numpy as np

from benchmarks.kernel_cases import Case, on_torch

TINY = (6, 20)          # N, D
LARGE = (65536, 512)    # N, D: 128 MB per (N, D) array in fp32
MOMENTUM, EPS = 0.1, 1e-5


def cases(tiny: bool, dtype, rng) -> list:
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import batchnorm_backward as bn
    ref = load_solution("batchnorm_backward")
    dtype = np.dtype(dtype)
    N, D = TINY if tiny else LARGE
    x = (rng.uniform(-3, 3, size=(1, D)) + rng.standard_normal((N, D))).astype(dtype)  # N, D
    gamma, beta, rm = (rng.standard_normal(D).astype(dtype) for _ in range(3))         # D
    rv = rng.uniform(0.5, 2.0, size=D).astype(dtype)                                    # D
    dy = rng.standard_normal((N, D)).astype(dtype)                                      # N, D
    x64, gamma64, beta64, rm64, rv64, dy64 = (a.astype(np.float64) for a in (x, gamma, beta, rm, rv, dy))
    _, mean64, rstd64, _, _ = ref.batchnorm_forward(x64, gamma64, beta64, rm64, rv64, True, MOMENTUM, EPS)
    d_x, d_gamma, d_beta, d_rm, d_rv, d_dy = (cuda.to_device(a) for a in (x, gamma, beta, rm, rv, dy))
    d_mean, d_rstd = (cuda.to_device(a.astype(dtype)) for a in (mean64, rstd64))
    y, dx = (cuda.device_array((N, D), dtype=dtype) for _ in range(2))
    mean, rstd, new_mean, new_var, dgamma, dbeta = (cuda.device_array(D, dtype=dtype) for _ in range(6))
    F, L = bn.FEATURES_PER_BLOCK, bn.ROW_LANES
    grid = (bn._blocks(D, F), (F, L))
    forward, backward = bn.train_forward_kernel(F, L, dtype), bn.train_backward_kernel(F, L, dtype)

    def torch_batchnorm(device):
        import torch
        x_t, g_t, b_t, rm_t, rv_t, dy_t, m_t, r_t = on_torch(
            device, x, gamma, beta, rm, rv, dy, mean64.astype(dtype), rstd64.astype(dtype))

        def forward_t():
            y_t, save_mean, save_invstd = torch.ops.aten.native_batch_norm(
                x_t, g_t, b_t, rm_t.clone(), rv_t.clone(), True, MOMENTUM, EPS)
            return {"y": y_t, "mean": save_mean, "rstd": save_invstd}

        def backward_t():
            dx_t, dg_t, db_t = torch.ops.aten.native_batch_norm_backward(
                dy_t, x_t, g_t, rm_t, rv_t, m_t, r_t, True, EPS, [True, True, True])
            return {"dx": dx_t, "dgamma": dg_t, "dbeta": db_t}
        return {"forward": forward_t, "backward": backward_t}

    def expected_forward():
        out = ref.batchnorm_forward(x64, gamma64, beta64, rm64, rv64, True, MOMENTUM, EPS)
        return dict(zip(("y", "mean", "rstd", "new_mean", "new_var"), out))

    return [
        Case(f"batchnorm training forward, fused Welford lanes (D={D})",
             {"x": d_x, "gamma": d_gamma, "beta": d_beta, "running_mean": d_rm, "running_var": d_rv},
             {"y": y, "mean": mean, "rstd": rstd, "new_mean": new_mean, "new_var": new_var},
             lambda: forward[grid](d_x, d_gamma, d_beta, d_rm, d_rv, dtype.type(MOMENTUM), dtype.type(EPS),
                                   y, mean, rstd, new_mean, new_var),
             expected_forward, lambda dev: torch_batchnorm(dev)["forward"]),
        Case(f"batchnorm training backward, fused sums + dx (D={D})",
             {"dy": d_dy, "x": d_x, "gamma": d_gamma, "mean": d_mean, "rstd": d_rstd},
             {"dx": dx, "dgamma": dgamma, "dbeta": dbeta},
             lambda: backward[grid](d_dy, d_x, d_gamma, d_mean, d_rstd, dx, dgamma, dbeta),
             lambda: dict(zip(("dx", "dgamma", "dbeta"),
                              ref.batchnorm_backward(dy64, x64, gamma64, mean64, rstd64))),
             lambda dev: torch_batchnorm(dev)["backward"]),
    ]
