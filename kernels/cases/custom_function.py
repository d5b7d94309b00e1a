"""Cases for kernels/custom_function.py: Square's forward, backward and double backward, and
RoundSTE's forward and straight-through backward, each one grid-stride launch over flat arrays.

TINY is 301 elements (a partial block); LARGE is 64M elements, 256 MB per array in fp32;
HUGE fills an 80 GB GPU (nine arrays of 1.6G elements). The expected answers run the
solution notebook's own engine (its Square and RoundSTE through ``apply_function``, its
``grad`` for the double backward); PyTorch's counterparts are the same Functions written with
autograd: ``x * x`` and its gradient, the gradient of that gradient (``create_graph=True``),
``torch.round``, and ``x + (round(x) - x).detach()``. E elements.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = 301           # E
LARGE = 64 * 1024 * 1024
HUGE = (1_600_000_000,)


def double_backward_reference(ref, x, dy, gdx):
    """(gx, gdy) from the solution's engine: Square's backward run with recording on, then
    the solution's grad of <gdx, dx> with respect to x and dy."""
    xt, dyt = ref.Tensor(x, requires_grad=True), ref.Tensor(dy, requires_grad=True)
    y = ref.apply_function(ref.Square, xt)
    with ref.set_grad_enabled(True):
        (dx,) = ref.as_gradients(ref.Square.backward(y.grad_fn.ctx, dyt), 1)
    gx, gdy = ref.grad(dx, [xt, dyt], ref.Tensor(gdx))
    return gx.data, gdy.data


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import custom_function as cf
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("custom_function")
    E = shape

    def fill(rng):
        x = (rng.standard_normal(E) * 3).astype(dtype)  # E: both signs, and a tenth of them halves
        x[: E // 10] = np.round(x[: E // 10]) + np.dtype(dtype).type(0.5)
        return {"x": x, "dy": rng.standard_normal(E).astype(dtype), "gdx": rng.standard_normal(E).astype(dtype)}

    host = arrays.make({"x": (E, dtype), "dy": (E, dtype), "gdx": (E, dtype)}, fill)
    x, dy, gdx = host.x, host.dy, host.gdx
    d_x, d_dy, d_gdx = (cuda.to_device(a) for a in (x, dy, gdx))
    y, dx, gx, gdy, r, dr = (cuda.device_array(E, dtype=dtype) for _ in range(6))
    as64 = lambda: [a.astype(np.float64) for a in (x, dy, gdx)]

    def engine(name, output):  # the solution's Function on its own engine: (y, dx)
        x64, dy64, _ = as64()
        return ref.grader_function(name, x64, dy64)[output]

    def torch_ops(device):
        import torch
        x_t, dy_t, gdx_t = on_torch(device, x, dy, gdx)

        def backward_t():
            xg = x_t.detach().requires_grad_()
            return {"dx": torch.autograd.grad(xg * xg, xg, dy_t)[0]}

        def double_t():
            xg, dyg = x_t.detach().requires_grad_(), dy_t.detach().requires_grad_()
            (dxg,) = torch.autograd.grad(xg * xg, xg, dyg, create_graph=True)
            gx_t, gdy_t = torch.autograd.grad(dxg, (xg, dyg), gdx_t)
            return {"gx": gx_t, "gdy": gdy_t}

        def ste_t():
            xg = x_t.detach().requires_grad_()
            return {"dx": torch.autograd.grad(xg + (torch.round(xg) - xg).detach(), xg, dy_t)[0]}
        return {"forward": lambda: {"y": x_t * x_t}, "backward": backward_t, "double": double_t,
                "round": lambda: {"y": torch.round(x_t)}, "ste": ste_t}

    return [
        Case(f"Square forward (E={E})", {"x": d_x}, {"y": y}, lambda: cf.square_forward_device(d_x, y),
             lambda: {"y": engine("Square", 0)}, lambda dev: torch_ops(dev)["forward"]),
        Case(f"Square backward from the saved x (E={E})", {"x": d_x, "dy": d_dy}, {"dx": dx},
             lambda: cf.square_backward_device(d_x, d_dy, dx),
             lambda: {"dx": engine("Square", 1)}, lambda dev: torch_ops(dev)["backward"]),
        Case(f"Square double backward (E={E})", {"x": d_x, "dy": d_dy, "gdx": d_gdx}, {"gx": gx, "gdy": gdy},
             lambda: cf.square_double_backward_device(d_x, d_dy, d_gdx, gx, gdy),
             lambda: dict(zip(("gx", "gdy"), double_backward_reference(ref, *as64()))),
             lambda dev: torch_ops(dev)["double"]),
        Case(f"RoundSTE forward, halves to even (E={E})", {"x": d_x}, {"y": r},
             lambda: cf.round_ste_forward_device(d_x, r),
             lambda: {"y": engine("RoundSTE", 0)}, lambda dev: torch_ops(dev)["round"]),
        Case(f"RoundSTE backward, straight through (E={E})", {"dy": d_dy}, {"dx": dr},
             lambda: cf.round_ste_backward_device(d_dy, dr),
             lambda: {"dx": engine("RoundSTE", 1)}, lambda dev: torch_ops(dev)["ste"]),
    ]
