"""Cases for kernels/per_step_update_trap.py: the strided, padded conv1d, forward and backward.

TINY keeps each simulated launch near 1K threads; LARGE is 32 sequences of 32 channels and
32K positions; HUGE fills an 80 GB GPU with the batch. Version 1 (kernels/
per_step_update_trap.py: one thread an output) and version 2 (kernels/per_step_update_trap_v2.py:
tiled matrix products, 4 x 4 outputs a thread) have a case each per op, writing the same output
arrays: GFLOP/s is the figure to read against cuDNN's, the bytes model (each array once) is
what the tiles aim at. Shape letters as in the kernel module: N, C_in, C_out, L, K, stride, padding.
"""
from __future__ import annotations

from backprop_traps.kernels.cases.common import Case, on_torch, solution

TINY = (2, 2, 2, 10, 3, 2, 1)            # N, C_in, C_out, L, K, stride, padding
LARGE = (32, 32, 32, 32768, 3, 1, 1)
HUGE = ((4096, 32, 32, 32768, 3, 1, 1),)  # x, dout, out and dx: 17 GB each in fp32


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import per_step_update_trap as ps, per_step_update_trap_v2 as ps2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("per_step_update_trap")
    N, C_in, C_out, L, K, stride, pad = shape
    L_out = (L + 2 * pad - K) // stride + 1
    host = arrays.make(
        {"x": ((N, C_in, L), dtype), "w": ((C_out, C_in, K), dtype), "b": (C_out, dtype),
         "dout": ((N, C_out, L_out), dtype)},
        lambda rng: {"x": rng.standard_normal((N, C_in, L)).astype(dtype),
                     "w": rng.standard_normal((C_out, C_in, K)).astype(dtype),
                     "b": rng.standard_normal(C_out).astype(dtype),
                     "dout": rng.standard_normal((N, C_out, L_out)).astype(dtype)})
    x, w, b, dout = host.x, host.w, host.b, host.dout
    d_x, d_w, d_b, d_dout = (cuda.to_device(a) for a in (x, w, b, dout))
    out = cuda.device_array(dout.shape, dtype=dtype)
    dx = cuda.device_array(x.shape, dtype=dtype)
    values = C_out * C_in * K
    dw, db = cuda.device_array(values, dtype=dtype), cuda.device_array(C_out, dtype=dtype)

    def weight_launch(version):  # stage 1 then stage 2, for dw and for db; each version's partials
        launch = ps if version == 1 else ps2
        w_parts = cuda.device_array((values, launch.partials_per_value(N * L_out)), dtype=dtype)
        b_parts = cuda.device_array((C_out, launch.bias_parts(N, L_out)), dtype=dtype)

        def backward_weight():
            launch.conv1d_backward_weight_device(d_dout, d_x, K, stride, pad, w_parts, dw)
            launch.conv1d_backward_bias_device(d_dout, b_parts, db)
        return backward_weight

    def torch_conv(device):
        import torch
        import torch.nn.functional as F
        x_t, w_t, b_t, dout_t = on_torch(device, x, w, b, dout)
        return {"forward": lambda: {"out": F.conv1d(x_t, w_t, b_t, stride, pad)},
                "data": lambda: {"dx": torch.nn.grad.conv1d_input(x.shape, w_t, dout_t, stride, pad)},
                "weight": lambda: {"dw": torch.nn.grad.conv1d_weight(x_t, w.shape, dout_t, stride, pad),
                                   "db": dout_t.sum((0, 2))}}

    grads = lambda: dict(zip(("dx", "dw", "db"), ref.conv1d_backward(dout, x, w, stride, pad)))
    flops, cfg = 2 * N * C_out * L_out * C_in * K, f"C{C_in}->{C_out} K{K} s{stride} p{pad}"
    found = []
    for version, launch, label in ((1, ps, ""), (2, ps2, ", v2: tiled")):
        found += [
            Case(f"conv1d forward{label} ({cfg})", {"x": d_x, "w": d_w, "b": d_b}, {"out": out},
                 lambda launch=launch: launch.conv1d_forward_device(d_x, d_w, d_b, stride, pad, out),
                 lambda: {"out": ref.conv1d_forward(x, w, b, stride, pad)},
                 lambda dev: torch_conv(dev)["forward"], flops),
            Case(f"conv1d backward-data{label} ({cfg})", {"dout": d_dout, "w": d_w}, {"dx": dx},
                 lambda launch=launch: launch.conv1d_backward_data_device(d_dout, d_w, stride, pad, dx),
                 lambda: {"dx": grads()["dx"]}, lambda dev: torch_conv(dev)["data"], flops),
            Case(f"conv1d backward-weight + bias{label} ({cfg})", {"dout": d_dout, "x": d_x},
                 {"dw": dw, "db": db}, weight_launch(version),
                 lambda: {k: v for k, v in grads().items() if k != "dx"},
                 lambda dev: torch_conv(dev)["weight"], flops),
        ]
    return found
