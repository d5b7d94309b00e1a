"""Benchmark cases for kernels/memory_budget.py, in the form of benchmarks/kernel_cases.py.

``cases(tiny, dtype, rng)``: the reversible block's forward (two coupling launches), its
inverse (the same kernel, the other sign and order), and its backward from the outputs alone
(the inverse, then each coupling's backward and weight gradients). TINY is (N, D) = (5, 3),
a partial block; LARGE is (65536, 256), 64 MB per half in fp32. PyTorch's counterpart is the
same block in torch ops, its backward by autograd through a forward run again from the
rebuilt inputs (as RevNet implementations do). The expected answers are the solution
notebook's rev_forward, rev_inverse and rev_backward. N rows, D features per half.
"""
from __future__ import annotations

import numpy as np

from benchmarks.kernel_cases import Case, on_torch

TINY = (5, 3)
LARGE = (65536, 256)


def cases(tiny: bool, dtype, rng) -> list:
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import memory_budget as mb
    ref = load_solution("memory_budget")
    dtype = np.dtype(dtype)
    N, D = TINY if tiny else LARGE
    params64 = [rng.standard_normal((D, D)) * 0.9 / np.sqrt(D), 0.2 * rng.standard_normal(D),
                rng.standard_normal((D, D)) * 0.9 / np.sqrt(D), 0.2 * rng.standard_normal(D)]
    x1, x2, dy1, dy2 = (rng.standard_normal((N, D)).astype(dtype) for _ in range(4))
    params = [p.astype(dtype) for p in params64]
    as64 = [a.astype(np.float64) for a in (x1, x2, dy1, dy2)] + [p.astype(np.float64) for p in params]
    y1_64, y2_64 = ref.rev_forward(as64[0], as64[1], *as64[4:])
    y1, y2 = y1_64.astype(dtype), y2_64.astype(dtype)
    blk = mb._Block(*params, dtype)
    d_x1, d_x2, d_y1, d_y2, d_dy1, d_dy2 = (cuda.to_device(a.ravel()) for a in (x1, x2, y1, y2, dy1, dy2))
    size = N * D
    out1, out2, t1, t2, r1, r2, u1, u2 = (cuda.device_array(size, dtype=dtype) for _ in range(8))
    du, dy1_all, dv, dx2 = (cuda.device_array(size, dtype=dtype) for _ in range(4))
    dWf, dbf, dWg, dbg = (cuda.device_array(n, dtype=dtype) for n in (D * D, D, D * D, D))
    elements, weights = mb.launch_config(size), mb.launch_config(D * (D + 1))
    plus, minus, one, zero = (dtype.type(v) for v in (1, -1, 1, 0))

    def forward():
        mb.coupling_kernel[elements](d_x1, d_x2, blk.Wf, blk.bf, plus, D, out1, t1)
        mb.coupling_kernel[elements](d_x2, out1, blk.Wg, blk.bg, plus, D, out2, t2)

    def inverse():
        mb.coupling_kernel[elements](d_y2, d_y1, blk.Wg, blk.bg, minus, D, r2, u2)
        mb.coupling_kernel[elements](d_y1, r2, blk.Wf, blk.bf, minus, D, r1, u1)

    def backward():
        inverse()
        mb.coupling_backward_kernel[elements](d_dy2, u2, blk.Wg, d_dy1, one, D, du, dy1_all)
        mb.weight_grads_kernel[weights](d_y1, du, zero, D, dWg, dbg)
        mb.coupling_backward_kernel[elements](dy1_all, u1, blk.Wf, d_dy2, one, D, dv, dx2)
        mb.weight_grads_kernel[weights](r2, dv, zero, D, dWf, dbf)

    def flat(d):
        return {k: np.ravel(v) for k, v in d.items()}

    def expected_backward():
        out = ref.rev_backward(as64[2], as64[3], y1_64, y2_64, *as64[4:])
        return flat(dict(zip(("dx1", "dx2", "dWf", "dbf", "dWg", "dbg"), out[2:])))

    def torch_ops(device):
        import torch
        x1_t, x2_t, y1_t, y2_t, dy1_t, dy2_t, Wf, bf, Wg, bg = on_torch(device, x1, x2, y1, y2, dy1, dy2, *params)

        def block(a, b, wf, bias_f, wg, bias_g):
            c = a + torch.tanh(b @ wf + bias_f)
            return c, b + torch.tanh(c @ wg + bias_g)

        def inverse_t():
            with torch.no_grad():
                r2_t = y2_t - torch.tanh(y1_t @ Wg + bg)
                return r2_t, y1_t - torch.tanh(r2_t @ Wf + bf)

        def backward_t():
            r2_t, r1_t = inverse_t()
            leaves = [a.detach().requires_grad_() for a in (r1_t, r2_t, Wf, bf, Wg, bg)]
            grads = torch.autograd.grad(block(*leaves), leaves, (dy1_t, dy2_t))
            return {k: g.reshape(-1) for k, g in zip(("dx1", "dx2", "dWf", "dbf", "dWg", "dbg"), grads)}
        return {"forward": lambda: {k: v.reshape(-1) for k, v in zip(("y1", "y2"), block(x1_t, x2_t, Wf, bf, Wg, bg))},
                "inverse": lambda: {k: v.reshape(-1) for k, v in zip(("x2", "x1"), inverse_t())},
                "backward": backward_t}

    cfg = f"N={N}, D={D}"
    return [
        Case(f"reversible block forward, two couplings ({cfg})",
             {"x1": d_x1, "x2": d_x2, "Wf": blk.Wf, "bf": blk.bf, "Wg": blk.Wg, "bg": blk.bg},
             {"y1": out1, "y2": out2}, forward, lambda: flat({"y1": y1_64, "y2": y2_64}),
             lambda dev: torch_ops(dev)["forward"], 4 * size * D),
        Case(f"reversible block inverse, the couplings undone ({cfg})",
             {"y1": d_y1, "y2": d_y2, "Wf": blk.Wf, "bf": blk.bf, "Wg": blk.Wg, "bg": blk.bg},
             {"x1": r1, "x2": r2}, inverse,
             lambda: flat(dict(zip(("x1", "x2"), ref.rev_inverse(y1_64, y2_64, *as64[4:])))),
             lambda dev: torch_ops(dev)["inverse"], 4 * size * D),
        Case(f"reversible block backward from its outputs ({cfg})",
             {"dy1": d_dy1, "dy2": d_dy2, "y1": d_y1, "y2": d_y2, "Wf": blk.Wf, "Wg": blk.Wg},
             {"dx1": dy1_all, "dx2": dx2, "dWf": dWf, "dbf": dbf, "dWg": dWg, "dbg": dbg},
             backward, expected_backward, lambda dev: torch_ops(dev)["backward"], 12 * size * D),
    ]
