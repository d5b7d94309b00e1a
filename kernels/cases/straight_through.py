"""Cases for kernels/straight_through.py and kernels/straight_through_v2.py: the fake-quant
forward (reads x, writes out and the packed mask) and the straight-through backward (reads dout
and the mask, writes dx), for version 1 (a thread a mask byte, or an element) and version 2
(a byte's 8 elements in two 128-bit loads), writing the same output arrays.

TINY is 301 elements (a partial last mask byte); LARGE is 64M elements, 256 MB per array in
fp32; HUGE fills an 80 GB GPU. PyTorch's counterpart is torch.fake_quantize_per_tensor_affine,
whose backward keeps a full-size boolean mask where these kernels keep one bit. E elements.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = 301           # E
LARGE = 64 * 1024 * 1024
HUGE = (4_500_000_000,)
SCALE, QMIN, QMAX = 0.05, -128, 127


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import straight_through as st, straight_through_v2 as st2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("straight_through")
    E = shape

    def fill(rng):
        x = (rng.standard_normal(E) * 4).astype(dtype)       # E: about 5% outside the grid's range
        u = x / np.dtype(dtype).type(SCALE)
        return {"x": x, "dout": rng.standard_normal(E).astype(dtype), "mask": np.packbits((u >= QMIN) & (u <= QMAX))}

    host = arrays.make({"x": (E, dtype), "dout": (E, dtype), "mask": (-(-E // 8), np.uint8)}, fill)
    x, dout, mask = host.x, host.dout, host.mask
    d_x, d_dout, d_mask_in = (cuda.to_device(a) for a in (x, dout, mask))
    out, dx = (cuda.device_array(E, dtype=dtype) for _ in range(2))
    d_mask = cuda.device_array(-(-E // 8), dtype=np.uint8)
    as64 = lambda a: a.astype(np.float64)

    def torch_fake_quant(device):
        import torch
        x_t, dout_t = on_torch(device, x, dout)

        def fake_quant(t):  # PyTorch's fused op computes in float32: composed ops for float64
            if t.dtype == torch.float32:
                return torch.fake_quantize_per_tensor_affine(t, SCALE, 0, QMIN, QMAX)
            u = t / SCALE
            q = torch.clamp(torch.round(u), QMIN, QMAX) * SCALE
            inside = ((u >= QMIN) & (u <= QMAX)).to(t.dtype)
            return q.detach() + (t - t.detach()) * inside  # the straight-through gradient

        def backward_t():
            xg = x_t.detach().requires_grad_()
            return {"dx": torch.autograd.grad(fake_quant(xg), xg, dout_t)[0]}
        return {"forward": lambda: {"out": fake_quant(x_t)}, "backward": backward_t}

    found = []
    for version, label in ((st, ""), (st2, ", v2: 8 a thread, 128-bit loads")):
        found += [
            Case(f"fake-quant forward + bit mask{label} (E={E})", {"x": d_x}, {"out": out, "mask": d_mask},
                 lambda version=version: version.fake_quant_forward_device(d_x, SCALE, QMIN, QMAX, out, d_mask),
                 lambda: {"out": ref.fake_quant_forward(as64(x), SCALE, QMIN, QMAX), "mask": mask},
                 lambda dev: torch_fake_quant(dev)["forward"]),
            Case(f"straight-through backward from the mask{label} (E={E})", {"dout": d_dout, "mask": d_mask_in},
                 {"dx": dx}, lambda version=version: version.fake_quant_backward_device(d_dout, d_mask_in, dx),
                 lambda: {"dx": ref.fake_quant_backward(as64(dout), as64(x), SCALE, QMIN, QMAX)},
                 lambda dev: torch_fake_quant(dev)["backward"]),
        ]
    return found
