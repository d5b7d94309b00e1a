"""Cases for kernels/memory_budget.py: the reversible block's forward (two coupling launches),
its inverse (the same kernel, the other sign and order), and its backward from the outputs
alone (the inverse, then each coupling's backward and weight gradients).

TINY is (N, D) = (5, 3), a partial block; LARGE is (65536, 256), 64 MB per half in fp32;
HUGE fills an 80 GB GPU with rows, and with features (D = 16,384: weights of 1 GB, and
D (D + 1) weight-gradient threads). The couplings are naive matrix products (one thread per
output, a row of b each), so flops say more than bytes. PyTorch's counterpart is the same
block in torch ops, its backward by autograd through a forward run again from the rebuilt
inputs (as RevNet implementations do). The expected answers are the solution notebook's
rev_forward, rev_inverse and rev_backward. N rows, D features per half.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (5, 3)          # N, D
LARGE = (65536, 256)
HUGE = ((2_800_000, 256), (40_960, 16_384))
GRADIENTS = ("dx1", "dx2", "dWf", "dbf", "dWg", "dbg")


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import memory_budget as mb
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("memory_budget")
    N, D = shape

    def fill(rng):
        params = {"Wf": rng.standard_normal((D, D)) * 0.9 / np.sqrt(D), "bf": 0.2 * rng.standard_normal(D),
                  "Wg": rng.standard_normal((D, D)) * 0.9 / np.sqrt(D), "bg": 0.2 * rng.standard_normal(D)}
        values = {**{k: v.astype(dtype) for k, v in params.items()},
                  **{k: rng.standard_normal((N, D)).astype(dtype) for k in ("x1", "x2", "dy1", "dy2")}}
        y1, y2 = ref.rev_forward(*(values[k].astype(np.float64) for k in ("x1", "x2", "Wf", "bf", "Wg", "bg")))
        return {**values, "y1": y1.astype(dtype), "y2": y2.astype(dtype)}  # the outputs the inverse starts from

    halves = {k: ((N, D), dtype) for k in ("x1", "x2", "y1", "y2", "dy1", "dy2")}
    host = arrays.make({**halves, "Wf": ((D, D), dtype), "bf": (D, dtype), "Wg": ((D, D), dtype),
                        "bg": (D, dtype)}, fill)
    d = {k: cuda.to_device(getattr(host, k)) for k in (*halves, "Wf", "bf", "Wg", "bg")}
    p = mb.Params(d["Wf"], d["bf"], d["Wg"], d["bg"])
    y1, y2, t = (cuda.device_array((N, D), dtype=dtype) for _ in range(3))                 # forward
    x1, x2, tf, tg = (cuda.device_array((N, D), dtype=dtype) for _ in range(4))            # inverse
    bx1, bx2, btf, btg, du, dv, dx1, dx2 = (cuda.device_array((N, D), dtype=dtype) for _ in range(8))  # backward
    grads = mb.Params(*(cuda.device_array(s, dtype=dtype) for s in ((D, D), D, (D, D), D)))
    as64 = lambda *names: [getattr(host, k).astype(np.float64) for k in names]

    def backward():
        mb.rev_backward_device(d["dy1"], d["dy2"], d["y1"], d["y2"], p, bx1, bx2, btf, btg, du, dv, dx1, dx2, grads)

    def expected_backward():
        out = ref.rev_backward(*as64("dy1", "dy2", "y1", "y2", "Wf", "bf", "Wg", "bg"))
        return dict(zip(GRADIENTS, out[2:]))

    def torch_ops(device):
        import torch
        x1_t, x2_t, y1_t, y2_t, dy1_t, dy2_t, Wf, bf, Wg, bg = on_torch(device, *(getattr(host, k) for k in (
            "x1", "x2", "y1", "y2", "dy1", "dy2", "Wf", "bf", "Wg", "bg")))

        def block(a, b, wf, bias_f, wg, bias_g):
            c = a + torch.tanh(b @ wf + bias_f)
            return c, b + torch.tanh(c @ wg + bias_g)

        def inverse_t():
            with torch.no_grad():
                r2_t = y2_t - torch.tanh(y1_t @ Wg + bg)
                return y1_t - torch.tanh(r2_t @ Wf + bf), r2_t

        def backward_t():
            leaves = [a.detach().requires_grad_() for a in (*inverse_t(), Wf, bf, Wg, bg)]
            return dict(zip(GRADIENTS, torch.autograd.grad(block(*leaves), leaves, (dy1_t, dy2_t))))
        return {"forward": lambda: dict(zip(("y1", "y2"), block(x1_t, x2_t, Wf, bf, Wg, bg))),
                "inverse": lambda: dict(zip(("x1", "x2"), inverse_t())), "backward": backward_t}

    cfg, params = f"N={N}, D={D}", {"Wf": p.Wf, "bf": p.bf, "Wg": p.Wg, "bg": p.bg}
    return [
        Case(f"reversible block forward, two couplings ({cfg})", {"x1": d["x1"], "x2": d["x2"], **params},
             {"y1": y1, "y2": y2}, lambda: mb.rev_forward_device(d["x1"], d["x2"], p, y1, y2, t),
             lambda: dict(zip(("y1", "y2"), ref.rev_forward(*as64("x1", "x2", "Wf", "bf", "Wg", "bg")))),
             lambda dev: torch_ops(dev)["forward"], 4 * N * D * D),
        Case(f"reversible block inverse, the couplings undone ({cfg})", {"y1": d["y1"], "y2": d["y2"], **params},
             {"x1": x1, "x2": x2}, lambda: mb.rev_inverse_device(d["y1"], d["y2"], p, x1, x2, tf, tg),
             lambda: dict(zip(("x1", "x2"), ref.rev_inverse(*as64("y1", "y2", "Wf", "bf", "Wg", "bg")))),
             lambda dev: torch_ops(dev)["inverse"], 4 * N * D * D),
        Case(f"reversible block backward from its outputs ({cfg})",
             {"dy1": d["dy1"], "dy2": d["dy2"], "y1": d["y1"], "y2": d["y2"], "Wf": p.Wf, "Wg": p.Wg},
             {"dx1": dx1, "dx2": dx2, "dWf": grads.Wf, "dbf": grads.bf, "dWg": grads.Wg, "dbg": grads.bg},
             backward, expected_backward, lambda dev: torch_ops(dev)["backward"], 12 * N * D * D),
    ]
