"""Cases for question 20's kernels (the solution notebook's own scatter and gather): max-pool
backward by the atomic scatter (dx zeroed first, part of the op) and by the gather, so the
static compile and the GPU run cover the kernels a learner writes.

The question's contract is float64 (its gather starts its sum from the literal 0.0): there
are no float32 cases. The notebook has no launcher: the grid is this file's, one thread per
output (scatter) or per input (gather), in 1-D grids of THREADS. TINY, LARGE and HUGE are
the routing-trap pooling cases' (kernels/cases/routing_trap.py). N, C, H, W, k, s as there.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases import routing_trap as pooling
from backprop_traps.kernels.cases.common import Case, on_torch, solution, zero_fill

TINY, LARGE, HUGE = pooling.TINY, pooling.LARGE, pooling.HUGE
THREADS = 128


def blocks(total: int) -> int:
    return max(1, -(-total // THREADS))


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels.runtime.device import cuda
    sol, pooling_ref = solution("maxpool_kernel"), solution("routing_trap")  # question 1's argmax and dx
    if np.dtype(dtype) != np.float64:
        return []
    N, C, H, W, k, s = shape
    out_shape = pooling.pooled(shape)

    def fill(rng):
        x = rng.standard_normal((N, C, H, W))
        _, argmax = pooling_ref.maxpool2d_forward(x, k, s)           # N, C, Ho, Wo: first maximum, flat h * W + w
        return {"x": x, "argmax": argmax, "dout": rng.standard_normal(argmax.shape).astype(dtype)}

    host = arrays.make({"x": ((N, C, H, W), np.float64), "argmax": (out_shape, np.int64),
                        "dout": (out_shape, dtype)}, fill)
    x, argmax, dout = host.x, host.argmax, host.dout
    d_dout, d_argmax = cuda.to_device(dout), cuda.to_device(argmax)
    dx_scatter, dx_gather = (cuda.device_array(x.shape, dtype=dtype) for _ in range(2))

    def scatter():
        zero_fill(dx_scatter)
        sol.maxpool2d_backward_scatter_kernel[blocks(dout.size), THREADS](d_dout, d_argmax, dx_scatter)

    def gather():
        sol.maxpool2d_backward_gather_kernel[blocks(x.size), THREADS](d_dout, d_argmax, dx_gather, k, s)

    def torch_backward(device):
        import torch
        x_t, dout_t, idx_t = on_torch(device, x.astype(dtype), dout, argmax)
        return lambda: {"dx": torch.ops.aten.max_pool2d_with_indices_backward(
            dout_t, x_t, [k, k], [s, s], [0, 0], [1, 1], False, idx_t)}

    expected = lambda: {"dx": pooling_ref.maxpool2d_backward(dout.astype(np.float64), argmax, x.shape, k, s)}
    cfg = f"k{k} s{s}"
    return [
        Case(f"question 20: max-pool backward, learner's scatter ({cfg})", {"dout": d_dout, "argmax": d_argmax},
             {"dx": dx_scatter}, scatter, expected, torch_backward),
        Case(f"question 20: max-pool backward, learner's gather ({cfg})", {"dout": d_dout, "argmax": d_argmax},
             {"dx": dx_gather}, gather, expected, torch_backward),
    ]
