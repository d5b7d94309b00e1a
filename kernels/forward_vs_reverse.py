"""Batched JVP and VJP steps through a chain of matrices, Numba CUDA.

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
transposed in memory. (The first kernels here gave each thread one output and read A
straight from global memory: at B = 1, 15 of every 16 threads of a block found no column
and returned, each live thread strode alone through a row of A, and issue 34 measured 1% of
bandwidth, 0.02-0.03x cuBLAS. A gemv for B = 1 would give each row a warp that reads
consecutive A[i, j] and reduces across the warp: what cuBLAS does.)

Run: the tests run it under the Numba CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set by
tests/conftest.py): ``python -m pytest tests/kernels/test_forward_vs_reverse_kernels.py``;
on a GPU, ``BACKPROP_TRAPS_REAL_GPU=1 python -m pytest tests/kernels``.

Shapes: A (M, N) is one layer (``As[i]`` is (m_{i+1}, m_i)); B is the number of tangents
or cotangents in a block; V (N, B) -> out (M, B) forward; U (B, M) -> out (B, N) reverse.
The math runs in the arrays' dtype (float32 or float64).

Check and time it: python -m backprop_traps.kernels.forward_vs_reverse (from any folder) runs these kernels on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""

if __name__ == "__main__":  # python -m backprop_traps.kernels.forward_vs_reverse: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import numpy as np

from backprop_traps.kernels.runtime.device import cuda
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


# host functions: numpy in, numpy out ---------------------------------------------------------


def jvp_block(As, V: np.ndarray) -> np.ndarray:
    """Tangents V (m_0, B) pushed through A_1, ..., A_k: (m_k, B). Stays on the device
    between layers; each layer's matrix is copied over once."""
    d_V = cuda.to_device(np.ascontiguousarray(V))
    for A in As:  # A_1 first
        d_out = cuda.device_array((A.shape[0], d_V.shape[1]), dtype=d_V.dtype)  # m_i, B
        jvp_step_device(cuda.to_device(np.ascontiguousarray(A, dtype=d_V.dtype)), d_V, d_out)
        d_V = d_out
    return d_V.copy_to_host()


def vjp_block(As, U: np.ndarray) -> np.ndarray:
    """Cotangents U (B, m_k) pulled back through A_k, ..., A_1: (B, m_0)."""
    d_U = cuda.to_device(np.ascontiguousarray(U))
    for A in reversed(As):  # A_k first
        d_out = cuda.device_array((d_U.shape[0], A.shape[1]), dtype=d_U.dtype)  # B, m_{i-1}
        vjp_step_device(d_U, cuda.to_device(np.ascontiguousarray(A, dtype=d_U.dtype)), d_out)
        d_U = d_out
    return d_U.copy_to_host()


def chain_jvp(As, v: np.ndarray) -> np.ndarray:
    """J v for one tangent v (m_0,): (m_k,)."""
    return jvp_block(As, v[:, None])[:, 0]


def chain_vjp(As, u: np.ndarray) -> np.ndarray:
    """J^T u for one cotangent u (m_k,): (m_0,)."""
    return vjp_block(As, u[None, :])[0]


def jacobian_forward(As) -> np.ndarray:
    """J (m_k, m_0) by forward mode: all m_0 basis tangents at once."""
    return jvp_block(As, np.eye(As[0].shape[1], dtype=As[0].dtype))


def jacobian_reverse(As) -> np.ndarray:
    """J (m_k, m_0) by reverse mode: all m_k basis cotangents at once."""
    return vjp_block(As, np.eye(As[-1].shape[0], dtype=As[-1].dtype))


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("forward_vs_reverse"))
