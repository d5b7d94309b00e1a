"""Benchmark cases for question 20's kernels (the solution notebook's own scatter and gather),
in the form of benchmarks/kernel_cases.py.

``cases(tiny, dtype, rng)``: max-pool backward by the atomic scatter (dx zeroed first, part of
the op) and by the gather, from the solution notebook, so the static compile and the GPU run
cover the kernels a learner writes. The question's contract is float64 (its gather starts its
sum from the literal 0.0): there are no float32 cases.
TINY and LARGE as the routing-trap pooling cases. N, C, H, W, k, s as in kernels/routing_trap.py.
"""
from __future__ import annotations

import numpy as np

from benchmarks.kernel_cases import LARGE as ALL_LARGE, TINY as ALL_TINY, Case, blocks, on_torch

THREADS = 128


def cases(tiny: bool, dtype, rng) -> list:
    from numba import cuda
    from numba.cuda.cudadrv.driver import device_memset
    from backprop_traps.grader.checks.maxpool_kernel import probes
    from backprop_traps.grader.loading.reference import load_solution
    sol = load_solution("maxpool_kernel")
    dtype = np.dtype(dtype)
    if dtype != np.float64:
        return []
    N, C, H, W, k, s = (ALL_TINY if tiny else ALL_LARGE).pool
    x = rng.standard_normal((N, C, H, W))
    argmax = probes.argmax_of(x, k, s)                         # N, C, Ho, Wo
    dout = rng.standard_normal(argmax.shape).astype(dtype)     # N, C, Ho, Wo
    d_dout, d_argmax = cuda.to_device(dout), cuda.to_device(argmax)
    dx_scatter, dx_gather = (cuda.device_array(x.shape, dtype=dtype) for _ in range(2))

    def scatter():
        device_memset(dx_scatter, 0, dx_scatter.nbytes)
        sol.maxpool2d_backward_scatter_kernel[blocks(dout.size, THREADS), THREADS](d_dout, d_argmax, dx_scatter)

    def gather():
        sol.maxpool2d_backward_gather_kernel[blocks(x.size, THREADS), THREADS](d_dout, d_argmax, dx_gather, k, s)

    def torch_backward(device):
        import torch
        x_t, dout_t, idx_t = on_torch(device, x.astype(dtype), dout, argmax)
        return lambda: {"dx": torch.ops.aten.max_pool2d_with_indices_backward(
            dout_t, x_t, [k, k], [s, s], [0, 0], [1, 1], False, idx_t)}

    expected = lambda: {"dx": probes.backward(dout.astype(np.float64), argmax, x.shape)}
    cfg = f"k{k} s{s}"
    return [
        Case(f"question 20: max-pool backward, learner's scatter ({cfg})", {"dout": d_dout, "argmax": d_argmax},
             {"dx": dx_scatter}, scatter, expected, torch_backward),
        Case(f"question 20: max-pool backward, learner's gather ({cfg})", {"dout": d_dout, "argmax": d_argmax},
             {"dx": dx_gather}, gather, expected, torch_backward),
    ]
