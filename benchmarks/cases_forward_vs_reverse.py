"""Benchmark cases for kernels/forward_vs_reverse.py, in the form of benchmarks/kernel_cases.py.

``cases(tiny, dtype, rng)``: one JVP step (out = A V, a block of B tangents) and one VJP step
(out = U A, a block of B cotangents, A^T never formed), each one launch. TINY is a (19, 23)
matrix and B = 5; LARGE is (8192, 8192) with B = 64 (256 MB of A in fp32). These are naive
reference kernels (one thread per output, no tiling): flops say more than bytes. PyTorch's
counterpart is the matrix product itself (TF32 off). M rows, N columns of A, B the block.
"""
from __future__ import annotations

import numpy as np

from benchmarks.kernel_cases import Case, on_torch

TINY = (19, 23, 5)        # M, N, B
LARGE = (8192, 8192, 64)


def cases(tiny: bool, dtype, rng) -> list:
    from numba import cuda
    from backprop_traps.kernels import forward_vs_reverse as fr
    dtype = np.dtype(dtype)
    M, N, B = TINY if tiny else LARGE
    A = rng.standard_normal((M, N)).astype(dtype)   # M, N
    V = rng.standard_normal((N, B)).astype(dtype)   # N, B
    U = rng.standard_normal((B, M)).astype(dtype)   # B, M
    d_A, d_V, d_U = (cuda.to_device(a) for a in (A, V, U))
    jvp_out, vjp_out = cuda.device_array((M, B), dtype=dtype), cuda.device_array((B, N), dtype=dtype)
    A64, V64, U64 = (a.astype(np.float64) for a in (A, V, U))

    def torch_products(device):
        A_t, V_t, U_t = on_torch(device, A, V, U)
        return {"jvp": lambda: {"out": A_t @ V_t}, "vjp": lambda: {"out": U_t @ A_t}}

    flops = 2 * M * N * B
    return [
        Case(f"JVP step, A V (M={M}, N={N}, B={B})", {"A": d_A, "V": d_V}, {"out": jvp_out},
             lambda: fr.jvp_step_kernel[fr._blocks(B, M), fr.THREADS](d_A, d_V, jvp_out),
             lambda: {"out": A64 @ V64}, lambda dev: torch_products(dev)["jvp"], flops),
        Case(f"VJP step, U A (M={M}, N={N}, B={B})", {"U": d_U, "A": d_A}, {"out": vjp_out},
             lambda: fr.vjp_step_kernel[fr._blocks(N, B), fr.THREADS](d_U, d_A, vjp_out),
             lambda: {"out": U64 @ A64}, lambda dev: torch_products(dev)["vjp"], flops),
    ]
