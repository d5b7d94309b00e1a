"""Benchmark cases for kernels/straight_through.py, in the form of benchmarks/kernel_cases.py.

``cases(tiny, dtype, rng)``: the fake-quant forward (reads x, writes out and the packed mask,
one thread per mask byte) and the straight-through backward (reads dout and the mask, writes
dx). TINY is 301 elements (a partial last mask byte); LARGE is 64M elements, 256 MB per
array in fp32. PyTorch's counterpart is torch.fake_quantize_per_tensor_affine, whose
backward keeps a full-size boolean mask where these kernels keep one bit. E elements.
"""
from __future__ import annotations

import math

import numpy as np

from benchmarks.kernel_cases import Case, blocks, on_torch

TINY = 301
LARGE = 64 * 1024 * 1024
SCALE, QMIN, QMAX = 0.05, -128, 127


def cases(tiny: bool, dtype, rng) -> list:
    from numba import cuda
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.kernels import straight_through as st
    ref = load_solution("straight_through")
    dtype = np.dtype(dtype)
    E = TINY if tiny else LARGE
    x = (rng.standard_normal(E) * 4).astype(dtype)       # E: about 5% outside the grid's range
    dout = rng.standard_normal(E).astype(dtype)          # E
    mask = np.packbits((x / dtype.type(SCALE) >= QMIN) & (x / dtype.type(SCALE) <= QMAX))
    d_x, d_dout, d_mask_in = (cuda.to_device(a) for a in (x, dout, mask))
    out, dx = (cuda.device_array(E, dtype=dtype) for _ in range(2))
    d_mask = cuda.device_array(math.ceil(E / 8), dtype=np.uint8)
    tpb = st.THREADS_PER_BLOCK
    scale, lo, hi = (dtype.type(v) for v in (SCALE, QMIN, QMAX))
    magic = dtype.type(1.5 * 2 ** np.finfo(dtype).nmant)
    x64, dout64 = x.astype(np.float64), dout.astype(np.float64)

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

    return [
        Case(f"fake-quant forward + bit mask (E={E})", {"x": d_x}, {"out": out, "mask": d_mask},
             lambda: st.fake_quant_forward_kernel[blocks(d_mask.size, tpb), tpb](d_x, scale, lo, hi, magic, out, d_mask),
             lambda: {"out": ref.fake_quant_forward(x64, SCALE, QMIN, QMAX), "mask": mask},
             lambda dev: torch_fake_quant(dev)["forward"]),
        Case(f"straight-through backward from the mask (E={E})", {"dout": d_dout, "mask": d_mask_in},
             {"dx": dx},
             lambda: st.fake_quant_backward_kernel[blocks(E, tpb), tpb](d_dout, d_mask_in, dx, dtype.type(0)),
             lambda: {"dx": ref.fake_quant_backward(dout64, x64, SCALE, QMIN, QMAX)},
             lambda dev: torch_fake_quant(dev)["backward"]),
    ]
