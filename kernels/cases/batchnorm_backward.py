"""Cases for kernels/batchnorm_backward.py: the fused training forward (the statistics, the
running averages and y in one launch), the evaluation forward (running statistics, one
thread per element) and the fused training backward (the per-feature sums, which are dgamma
and dbeta, then dx, in one launch).

TINY keeps a simulated launch at one block of 256 threads; LARGE is a conv layer's batch as
(N*H*W, C) rows, 128 MB per (N, D) array in fp32; HUGE fills an 80 GB GPU with rows.
PyTorch's counterparts are the ops its autograd calls, ``native_batch_norm`` (training and
evaluation) and ``native_batch_norm_backward``. Shape letters: N examples, D features.

Version 2 (kernels/batchnorm_backward_v2.py: the two-stage column reduction, 128-bit loads)
has a case per op beside version 1's, writing the same output arrays (HUGE has no room for a
second set) through scratch made here: its partials and coefficients, not counted as traffic.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (6, 20)          # N, D
LARGE = (65536, 512)    # 128 MB per (N, D) array in fp32
HUGE = ((7_600_000, 512),)
MOMENTUM, EPS = 0.1, 1e-5


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import batchnorm_backward as bn, batchnorm_backward_v2 as bn2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("batchnorm_backward")
    N, D = shape

    def fill(rng):
        x = (rng.uniform(-3, 3, size=(1, D)) + rng.standard_normal((N, D))).astype(dtype)  # N, D
        gamma, beta, rm = (rng.standard_normal(D).astype(dtype) for _ in range(3))         # D
        rv = rng.uniform(0.5, 2.0, size=D).astype(dtype)                                    # D
        dy = rng.standard_normal((N, D)).astype(dtype)                                      # N, D
        _, mean, rstd, _, _ = ref.batchnorm_forward(*(a.astype(np.float64) for a in (x, gamma, beta, rm, rv)),
                                                    True, MOMENTUM, EPS)
        return {"x": x, "gamma": gamma, "beta": beta, "rm": rm, "rv": rv, "dy": dy, "mean": mean, "rstd": rstd}

    host = arrays.make({"x": ((N, D), dtype), "gamma": (D, dtype), "beta": (D, dtype), "rm": (D, dtype),
                        "rv": (D, dtype), "dy": ((N, D), dtype), "mean": (D, np.float64),
                        "rstd": (D, np.float64)}, fill)
    x, gamma, beta, rm, rv, dy = host.x, host.gamma, host.beta, host.rm, host.rv, host.dy
    as64 = lambda *a: [v.astype(np.float64) for v in a]
    d_x, d_gamma, d_beta, d_rm, d_rv, d_dy = (cuda.to_device(a) for a in (x, gamma, beta, rm, rv, dy))
    d_mean, d_rstd = (cuda.to_device(a.astype(dtype)) for a in (host.mean, host.rstd))
    y, y_eval, dx = (cuda.device_array((N, D), dtype=dtype) for _ in range(3))
    mean, rstd, new_mean, new_var, dgamma, dbeta, mean_eval, rstd_eval = (
        cuda.device_array(D, dtype=dtype) for _ in range(8))
    work = bn2.scratch(N, D, dtype)                                                         # version 2's

    def torch_batchnorm(device):
        import torch
        x_t, g_t, b_t, rm_t, rv_t, dy_t, m_t, r_t = on_torch(
            device, x, gamma, beta, rm, rv, dy, host.mean.astype(dtype), host.rstd.astype(dtype))

        def forward_t(training):
            y_t, save_mean, save_invstd = torch.ops.aten.native_batch_norm(
                x_t, g_t, b_t, rm_t.clone(), rv_t.clone(), training, MOMENTUM, EPS)
            return {"y": y_t, "mean": save_mean, "rstd": save_invstd} if training else {"y": y_t}

        def backward_t():
            dx_t, dg_t, db_t = torch.ops.aten.native_batch_norm_backward(
                dy_t, x_t, g_t, rm_t, rv_t, m_t, r_t, True, EPS, [True, True, True])
            return {"dx": dx_t, "dgamma": dg_t, "dbeta": db_t}
        return {"forward": lambda: forward_t(True), "eval": lambda: forward_t(False), "backward": backward_t}

    def expected_forward(training):
        out = ref.batchnorm_forward(*as64(x, gamma, beta, rm, rv), training, MOMENTUM, EPS)
        return dict(zip(("y", "mean", "rstd", "new_mean", "new_var"), out))

    forward_reads = {"x": d_x, "gamma": d_gamma, "beta": d_beta, "running_mean": d_rm, "running_var": d_rv}
    v2 = "v2: two-stage column reduction, 128-bit loads"
    return [
        Case(f"batchnorm training forward, fused Welford lanes (D={D})",
             {"x": d_x, "gamma": d_gamma, "beta": d_beta, "running_mean": d_rm, "running_var": d_rv},
             {"y": y, "mean": mean, "rstd": rstd, "new_mean": new_mean, "new_var": new_var},
             lambda: bn.train_forward_device(d_x, d_gamma, d_beta, d_rm, d_rv, MOMENTUM, EPS,
                                             y, mean, rstd, new_mean, new_var),
             lambda: expected_forward(True), lambda dev: torch_batchnorm(dev)["forward"]),
        Case(f"batchnorm evaluation forward, running statistics (D={D})",
             {"x": d_x, "gamma": d_gamma, "beta": d_beta, "running_mean": d_rm, "running_var": d_rv},
             {"y": y_eval, "mean": mean_eval, "rstd": rstd_eval},
             lambda: bn.eval_forward_device(d_x, d_gamma, d_beta, d_rm, d_rv, EPS, y_eval, mean_eval, rstd_eval),
             lambda: {k: v for k, v in expected_forward(False).items() if k in ("y", "mean", "rstd")},
             lambda dev: torch_batchnorm(dev)["eval"]),
        Case(f"batchnorm training backward, fused sums + dx (D={D})",
             {"dy": d_dy, "x": d_x, "gamma": d_gamma, "mean": d_mean, "rstd": d_rstd},
             {"dx": dx, "dgamma": dgamma, "dbeta": dbeta},
             lambda: bn.train_backward_device(d_dy, d_x, d_gamma, d_mean, d_rstd, dx, dgamma, dbeta),
             lambda: dict(zip(("dx", "dgamma", "dbeta"),
                              ref.batchnorm_backward(*as64(dy, x, gamma), host.mean, host.rstd))),
             lambda dev: torch_batchnorm(dev)["backward"]),
        Case(f"batchnorm training forward, {v2} (D={D})", forward_reads,
             {"y": y, "mean": mean, "rstd": rstd, "new_mean": new_mean, "new_var": new_var},
             lambda: bn2.train_forward_device(d_x, d_gamma, d_beta, d_rm, d_rv, MOMENTUM, EPS,
                                              y, mean, rstd, new_mean, new_var, work),
             lambda: expected_forward(True), lambda dev: torch_batchnorm(dev)["forward"]),
        Case(f"batchnorm evaluation forward, {v2} (D={D})", forward_reads,
             {"y": y_eval, "mean": mean_eval, "rstd": rstd_eval},
             lambda: bn2.eval_forward_device(d_x, d_gamma, d_beta, d_rm, d_rv, EPS, y_eval, mean_eval, rstd_eval, work),
             lambda: {k: v for k, v in expected_forward(False).items() if k in ("y", "mean", "rstd")},
             lambda dev: torch_batchnorm(dev)["eval"]),
        Case(f"batchnorm training backward, {v2} (D={D})",
             {"dy": d_dy, "x": d_x, "gamma": d_gamma, "mean": d_mean, "rstd": d_rstd},
             {"dx": dx, "dgamma": dgamma, "dbeta": dbeta},
             lambda: bn2.train_backward_device(d_dy, d_x, d_gamma, d_mean, d_rstd, dx, dgamma, dbeta, work),
             lambda: dict(zip(("dx", "dgamma", "dbeta"),
                              ref.batchnorm_backward(*as64(dy, x, gamma), host.mean, host.rstd))),
             lambda dev: torch_batchnorm(dev)["backward"]),
    ]
