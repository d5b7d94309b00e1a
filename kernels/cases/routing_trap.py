"""Cases for kernels/routing_trap.py: max- and average-pooling, forward and backward.

TINY keeps each simulated launch near 1K threads; LARGE moves > 100 MB per op in fp32 (64
images of 64 channels, 128 x 128); HUGE fills an 80 GB GPU with the batch. Shape letters as
in the kernel module: N, C, H, W, k, s. Version 2 (kernels/routing_trap_v2.py: flat unsigned
offsets, a 3-D grid, cells of s x s in the backward passes) has a case per kernel beside
version 1's, writing the same output arrays (HUGE has no room for a second set).
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch, solution, zero_fill

TINY = (2, 3, 9, 8, 3, 2)            # N, C, H, W, k, s
LARGE = (64, 64, 128, 128, 3, 2)
HUGE = ((3072, 64, 128, 128, 3, 2),)  # 77 GB in fp32: x, three dx, four pooled outputs


def pooled(shape):
    N, C, H, W, k, s = shape
    return N, C, (H - k) // s + 1, (W - k) // s + 1


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import routing_trap as rt, routing_trap_v2 as rt2
    from backprop_traps.kernels.runtime.device import cuda
    ref = solution("routing_trap")
    N, C, H, W, k, s = shape
    out_shape = pooled(shape)

    def fill(rng):
        x = rng.standard_normal((N, C, H, W)).astype(dtype)
        _, argmax = ref.maxpool2d_forward(x, k, s)
        return {"x": x, "argmax": argmax, "dout": rng.standard_normal(argmax.shape).astype(dtype)}

    host = arrays.make({"x": ((N, C, H, W), dtype), "argmax": (out_shape, np.int64),
                        "dout": (out_shape, dtype)}, fill)
    x, argmax, dout = host.x, host.argmax, host.dout
    d_x, d_argmax, d_dout = (cuda.to_device(a) for a in (x, argmax, dout))
    out_inf, out, am, out_avg = (cuda.device_array(out_shape, dtype=t) for t in (dtype, dtype, np.int64, dtype))
    dx, dx_atomic, dx_avg = (cuda.device_array(x.shape, dtype=dtype) for _ in range(3))

    def atomic():
        zero_fill(dx_atomic)  # the scatter needs dx zeroed: part of the op
        rt.maxpool2d_backward_atomic_device(d_dout, d_argmax, dx_atomic)

    def atomic_v2():
        zero_fill(dx_atomic)
        rt2.maxpool2d_backward_atomic_device(d_dout, d_argmax, dx_atomic)

    def torch_pool(device):
        import torch
        import torch.nn.functional as F
        x_t, dout_t = on_torch(device, x, dout)
        _, idx_t = F.max_pool2d(x_t, k, s, return_indices=True)
        max_bwd = lambda: {"dx": torch.ops.aten.max_pool2d_with_indices_backward(
            dout_t, x_t, [k, k], [s, s], [0, 0], [1, 1], False, idx_t)}
        return {
            "forward": lambda: dict(zip(("out", "argmax"), F.max_pool2d(x_t, k, s, return_indices=True))),
            "inference": lambda: {"out": F.max_pool2d(x_t, k, s)},
            "gather": max_bwd, "atomic": max_bwd,
            "avg_forward": lambda: {"out": F.avg_pool2d(x_t, k, s)},
            "avg_backward": lambda: {"dx": torch.ops.aten.avg_pool2d_backward(
                dout_t, x_t, [k, k], [s, s], [0, 0], False, True, None)},
        }

    cfg = f"k{k} s{s}"
    return [
        Case(f"max-pool forward + argmax ({cfg})", {"x": d_x}, {"out": out, "argmax": am},
             lambda: rt.maxpool2d_forward_device(d_x, out, am, k, s),
             lambda: dict(zip(("out", "argmax"), ref.maxpool2d_forward(x, k, s))),
             lambda dev: torch_pool(dev)["forward"]),
        Case(f"max-pool forward, inference only ({cfg})", {"x": d_x}, {"out": out_inf},
             lambda: rt.maxpool2d_forward_inference_device(d_x, out_inf, k, s),
             lambda: {"out": ref.maxpool2d_forward(x, k, s)[0]},
             lambda dev: torch_pool(dev)["inference"]),
        Case(f"max-pool backward, gather ({cfg})", {"dout": d_dout, "argmax": d_argmax}, {"dx": dx},
             lambda: rt.maxpool2d_backward_device(d_dout, d_argmax, dx, k, s),
             lambda: {"dx": ref.maxpool2d_backward(dout, argmax, x.shape, k, s)},
             lambda dev: torch_pool(dev)["gather"]),
        Case(f"max-pool backward, atomic scatter ({cfg})", {"dout": d_dout, "argmax": d_argmax},
             {"dx": dx_atomic}, atomic,
             lambda: {"dx": ref.maxpool2d_backward(dout, argmax, x.shape, k, s)},
             lambda dev: torch_pool(dev)["atomic"]),
        Case(f"avg-pool forward ({cfg})", {"x": d_x}, {"out": out_avg},
             lambda: rt.avgpool2d_forward_device(d_x, out_avg, k, s),
             lambda: {"out": ref.avgpool2d_forward(x, k, s)},
             lambda dev: torch_pool(dev)["avg_forward"]),
        Case(f"avg-pool backward ({cfg})", {"dout": d_dout}, {"dx": dx_avg},
             lambda: rt.avgpool2d_backward_device(d_dout, dx_avg, k, s),
             lambda: {"dx": ref.avgpool2d_backward(dout, x.shape, k, s)},
             lambda dev: torch_pool(dev)["avg_backward"]),
        Case(f"max-pool forward + argmax, v2: flat unsigned index, 3-D grid ({cfg})", {"x": d_x},
             {"out": out, "argmax": am}, lambda: rt2.maxpool2d_forward_device(d_x, out, am, k, s),
             lambda: dict(zip(("out", "argmax"), ref.maxpool2d_forward(x, k, s))),
             lambda dev: torch_pool(dev)["forward"]),
        Case(f"max-pool forward, inference only, v2: flat unsigned index, 3-D grid ({cfg})", {"x": d_x},
             {"out": out_inf}, lambda: rt2.maxpool2d_forward_inference_device(d_x, out_inf, k, s),
             lambda: {"out": ref.maxpool2d_forward(x, k, s)[0]}, lambda dev: torch_pool(dev)["inference"]),
        Case(f"max-pool backward, gather, v2: an s x s cell a thread, argmax read once a cell ({cfg})",
             {"dout": d_dout, "argmax": d_argmax}, {"dx": dx},
             lambda: rt2.maxpool2d_backward_device(d_dout, d_argmax, dx, k, s),
             lambda: {"dx": ref.maxpool2d_backward(dout, argmax, x.shape, k, s)},
             lambda dev: torch_pool(dev)["gather"]),
        Case(f"max-pool backward, atomic scatter, v2: flat unsigned index ({cfg})",
             {"dout": d_dout, "argmax": d_argmax}, {"dx": dx_atomic}, atomic_v2,
             lambda: {"dx": ref.maxpool2d_backward(dout, argmax, x.shape, k, s)},
             lambda dev: torch_pool(dev)["atomic"]),
        Case(f"avg-pool forward, v2: flat unsigned index, 3-D grid ({cfg})", {"x": d_x}, {"out": out_avg},
             lambda: rt2.avgpool2d_forward_device(d_x, out_avg, k, s),
             lambda: {"out": ref.avgpool2d_forward(x, k, s)}, lambda dev: torch_pool(dev)["avg_forward"]),
        Case(f"avg-pool backward, v2: an s x s cell a thread ({cfg})", {"dout": d_dout}, {"dx": dx_avg},
             lambda: rt2.avgpool2d_backward_device(d_dout, dx_avg, k, s),
             lambda: {"dx": ref.avgpool2d_backward(dout, x.shape, k, s)},
             lambda dev: torch_pool(dev)["avg_backward"]),
    ]
