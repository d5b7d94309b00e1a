"""Cases for kernels/vram_trap.py (and kernels/mlp_backprop.py, which launches the same
kernels): a linear + ReLU layer that saves a bit mask, forward and backward.

TINY is a 5-row layer; LARGE is 524,288 rows of 64 -> 64 (the batch whose 131,072 row groups
once broke the backward's grid y on a GPU); HUGE fills an 80 GB GPU with rows, and with a
layer 131,072 inputs wide (more than grid y's 65,535 rows of dW). Linear is a naive reference
kernel (no tiling): its bytes model is far below its real traffic, so GFLOP/s is given too.
Shape letters as in the kernel module: N, D_in, D_out. Version 2 (kernels/vram_trap_v2.py,
tiled products) has a forward and a backward case beside version 1's, on the same arrays.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (5, 4, 6)             # N, D_in, D_out
LARGE = (524288, 64, 64)
HUGE = ((75_000_000, 64, 64), (65_536, 131_072, 16))


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import vram_trap as vt, vram_trap_v2 as vt2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("vram_trap")
    N, D_in, D_out = shape
    mask_bytes = -(-N * D_out // 8)

    def fill(rng):
        h = rng.standard_normal((N, D_in)).astype(dtype)
        W = rng.standard_normal((D_in, D_out)).astype(dtype)
        b = rng.standard_normal(D_out).astype(dtype)
        da = rng.standard_normal((N, D_out)).astype(dtype)
        a, mask = ref.relu_forward_packed(h.astype(np.float64) @ W + b)
        return {"h": h, "W": W, "b": b, "da": da, "a": a, "mask": mask}

    host = arrays.make({"h": ((N, D_in), dtype), "W": ((D_in, D_out), dtype), "b": (D_out, dtype),
                        "da": ((N, D_out), dtype), "a": ((N, D_out), np.float64),
                        "mask": (mask_bytes, np.uint8)}, fill)
    h, W, b, da, mask = host.h, host.W, host.b, host.da, host.mask
    d_h, d_W, d_b, d_da, d_mask = (cuda.to_device(arr) for arr in (h, W, b, da, mask))
    a, a_mask = cuda.device_array((N, D_out), dtype=dtype), cuda.device_array(mask_bytes, dtype=np.uint8)
    dh, dW, db = (cuda.device_array(s, dtype=dtype) for s in ((N, D_in), (D_in, D_out), D_out))
    d_partials = cuda.device_array(vt.partials_shape(N, D_in, D_out), dtype=dtype)
    zero = np.dtype(dtype).type(0)

    def backward():
        vt.backward_params(d_da, d_mask, True, d_h, dW, db, zero, d_partials=d_partials)
        vt.backward_input(d_da, d_mask, True, d_W, dh, zero)

    def backward_v2():
        vt2.backward_params(d_da, d_mask, True, d_h, dW, db, d_partials=d_partials)
        vt2.backward_input(d_da, d_mask, True, d_W, dh)

    def grads():
        dz = ref.relu_backward_packed(da.astype(np.float64), mask, da.shape)
        return {"dh": dz @ W.T, "dW": h.T @ dz, "db": dz.sum(axis=0)}

    def torch_linear(device):
        import torch
        h_t, W_t, b_t, da_t = on_torch(device, h, W, b, da)
        a_t = torch.relu(torch.addmm(b_t, h_t, W_t))  # autograd keeps a float a; we keep the bits

        def backward_t():
            dz = torch.ops.aten.threshold_backward(da_t, a_t, 0)
            return {"dh": dz @ W_t.T, "dW": h_t.T @ dz, "db": dz.sum(0)}
        return {"forward": lambda: {"a": torch.relu(torch.addmm(b_t, h_t, W_t))}, "backward": backward_t}

    cfg = f"{D_in}->{D_out}"
    return [
        Case(f"linear+ReLU forward, bit mask ({cfg})", {"h": d_h, "W": d_W, "b": d_b},
             {"a": a, "mask": a_mask}, lambda: vt.linear_relu_forward_device(d_h, d_W, d_b, a, a_mask),
             lambda: {"a": host.a, "mask": mask}, lambda dev: torch_linear(dev)["forward"],
             2 * N * D_in * D_out),
        Case(f"linear+ReLU backward from the mask ({cfg})",
             {"da": d_da, "mask": d_mask, "h": d_h, "W": d_W}, {"dh": dh, "dW": dW, "db": db},
             backward, grads, lambda dev: torch_linear(dev)["backward"], 4 * N * D_in * D_out),
        Case(f"linear+ReLU forward, bit mask, v2: tiled 64 x 64, mask packed per block ({cfg})",
             {"h": d_h, "W": d_W, "b": d_b}, {"a": a, "mask": a_mask},
             lambda: vt2.linear_relu_forward_device(d_h, d_W, d_b, a, a_mask),
             lambda: {"a": host.a, "mask": mask}, lambda dev: torch_linear(dev)["forward"],
             2 * N * D_in * D_out),
        Case(f"linear+ReLU backward from the mask, v2: tiled 64 x 64 ({cfg})",
             {"da": d_da, "mask": d_mask, "h": d_h, "W": d_W}, {"dh": dh, "dW": dW, "db": db},
             backward_v2, grads, lambda dev: torch_linear(dev)["backward"], 4 * N * D_in * D_out),
    ]
