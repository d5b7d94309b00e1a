"""Cases for kernels/forward_vs_reverse.py: one JVP step (out = A V, a block of B tangents) and
one VJP step (out = U A, a block of B cotangents, A^T never formed), each one launch.

TINY is a (19, 140) matrix and B = 5 (the JVP's shared axis of 140 splits in two); LARGE is (8192, 8192) with B = 64 (256 MB of A in fp32);
HUGE fills an 80 GB GPU with a tall matrix (100M rows: past grid y's 65,535 row blocks), and
with a block of 75M cotangents of a small layer. Version 1 (kernels/forward_vs_reverse.py:
one thread an output) and version 2 (kernels/forward_vs_reverse_v2.py: the tiled product of
kernels/common/tiled_matmul.py) have a case each per step, writing the same output arrays:
flops say more than bytes. PyTorch's counterpart is the matrix product itself (TF32 off).
M rows, N columns of A, B the block.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.kernels.cases.common import Case, on_torch

TINY = (19, 140, 5)       # M, N, B
LARGE = (8192, 8192, 64)
HUGE = ((100_000_000, 64, 64), (64, 64, 75_000_000))


def cases(shape, dtype, arrays) -> list:
    from backprop_traps.kernels import forward_vs_reverse as fr, forward_vs_reverse_v2 as fr2
    from backprop_traps.kernels.common import tiled_matmul
    from backprop_traps.kernels.runtime.device import cuda
    M, N, B = shape
    host = arrays.make({"A": ((M, N), dtype), "V": ((N, B), dtype), "U": ((B, M), dtype)},
                       lambda rng: {"A": rng.standard_normal((M, N)).astype(dtype),   # M, N
                                    "V": rng.standard_normal((N, B)).astype(dtype),   # N, B
                                    "U": rng.standard_normal((B, M)).astype(dtype)})  # B, M
    A, V, U = host.A, host.V, host.U
    d_A, d_V, d_U = (cuda.to_device(a) for a in (A, V, U))
    jvp_out, vjp_out = cuda.device_array((M, B), dtype=dtype), cuda.device_array((B, N), dtype=dtype)
    jvp_parts, vjp_parts = tiled_matmul.scratch(M, B, N, dtype), tiled_matmul.scratch(B, N, M, dtype)  # split-K's
    as64 = lambda a: a.astype(np.float64)

    def torch_products(device):
        A_t, V_t, U_t = on_torch(device, A, V, U)
        return {"jvp": lambda: {"out": A_t @ V_t}, "vjp": lambda: {"out": U_t @ A_t}}

    flops = 2 * M * N * B
    jvp = lambda name, launch: Case(f"{name} (M={M}, N={N}, B={B})", {"A": d_A, "V": d_V}, {"out": jvp_out}, launch,
                                    lambda: {"out": as64(A) @ as64(V)}, lambda dev: torch_products(dev)["jvp"], flops)
    vjp = lambda name, launch: Case(f"{name} (M={M}, N={N}, B={B})", {"U": d_U, "A": d_A}, {"out": vjp_out}, launch,
                                    lambda: {"out": as64(U) @ as64(A)}, lambda dev: torch_products(dev)["vjp"], flops)
    return [
        jvp("JVP step, A V", lambda: fr.jvp_step_device(d_A, d_V, jvp_out)),
        vjp("VJP step, U A", lambda: fr.vjp_step_device(d_U, d_A, vjp_out)),
        jvp("JVP step, A V, v2: tiled", lambda: fr2.jvp_step_device(d_A, d_V, jvp_out, jvp_parts)),
        vjp("VJP step, U A, v2: tiled", lambda: fr2.vjp_step_device(d_U, d_A, vjp_out, vjp_parts)),
    ]
