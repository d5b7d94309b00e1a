"""Batched JVP and VJP steps through a chain of matrices, version 2: one tiled product (issue 34).

Forward mode pushes tangents through the chain one layer at a time, ``out = A V`` for a
block of B tangents ``V``; reverse mode pulls cotangents back, ``out = U A`` for a block of
B cotangents ``U``. With B = 1 these are one JVP and one VJP: matrix-vector products that
read each entry of A once, bound by memory bandwidth, which cuBLAS's gemv already reaches
(its transpose flag does ``U A`` without a transposed copy), so a single-vector kernel
would add nothing. With B = m_0 basis vectors forward mode yields the whole Jacobian, with
B = m_k reverse mode does: the batch turns every step into a matrix product (what
torch.func.jacfwd and jacrev get from vmap), and the Jacobian costs m_0 * S or m_k * S
multiply-adds, S = sum m_i m_{i-1}.

Both steps are matrix products, so both run one tiled kernel (kernels/common/tiled_matmul.py): a
block computes a 64 x 64 tile of the output through shared memory, each thread a 4 x 4 tile
in registers. The VJP multiplies U by A as it lies: a tile of A is copied row by row, never
transposed in memory.

Version 1 (kernels/forward_vs_reverse.py, the one to read first) gives each thread one output
and reads A straight from global memory: at B = 1, 15 of every 16 threads of a block find no
column and return, each live thread strides alone through a row of A, and issue 34 measured
1% of bandwidth, 0.02-0.03x cuBLAS. What changed here: the product is tiled, A and the
tangents are read once a block from shared memory, and the shared axis splits over blocks
when few output tiles would leave the GPU idle. (A gemv for B = 1 would give each row a warp
that reads consecutive A[i, j] and reduces across the warp: what cuBLAS does.) The host
functions are version 1's, with ``version=2``.

Run: the tests run both versions under the Numba CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``,
set by tests/conftest.py): ``python -m pytest tests/kernels/test_forward_vs_reverse_kernels.py``;
on a GPU, ``BACKPROP_TRAPS_REAL_GPU=1 python -m pytest tests/kernels``.

Shapes: A (M, N) is one layer (``As[i]`` is (m_{i+1}, m_i)); B is the number of tangents
or cotangents in a block; V (N, B) -> out (M, B) forward; U (B, M) -> out (B, N) reverse.
The math runs in the arrays' dtype (float32 or float64).

Check and time it: python -m backprop_traps.kernels.forward_vs_reverse (from any folder) runs
both versions on the benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""
from __future__ import annotations

from backprop_traps.kernels.common.tiled_matmul import matmul


# launchers: device arrays in, launched -------------------------------------------------------
def jvp_step_device(d_A, d_V, d_out, d_scratch=None):
    """1. forward mode, one JVP step for a block of tangents: d_out (M, B) = A V. d_scratch:
    tiled_matmul.scratch(M, B, N), for a product it splits (allocated there when None)."""
    matmul(d_A, d_V, d_out, d_scratch)


def vjp_step_device(d_U, d_A, d_out, d_scratch=None):
    """2. reverse mode, one VJP step for a block of cotangents: d_out (B, N) = U A (A^T never
    formed). d_scratch: tiled_matmul.scratch(B, N, M)."""
    matmul(d_U, d_A, d_out, d_scratch)
