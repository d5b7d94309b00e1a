"""Batched JVP and VJP steps through a chain of matrices, Numba CUDA: version 1, the one to read.

Forward mode pushes tangents through the chain one layer at a time, ``out = A V`` for a
block of B tangents ``V``; reverse mode pulls cotangents back, ``out = U A`` for a block of
B cotangents ``U``. With B = 1 these are one JVP and one VJP: matrix-vector products that
read each entry of A once, bound by memory bandwidth, which cuBLAS's gemv already reaches
(its transpose flag does ``U A`` without a transposed copy), so a single-vector kernel
would add nothing. With B = m_0 basis vectors forward mode yields the whole Jacobian, with
B = m_k reverse mode does: the batch turns every step into a matrix product (what
torch.func.jacfwd and jacrev get from vmap), and the Jacobian costs m_0 * S or m_k * S
multiply-adds, S = sum m_i m_{i-1}.

Thread mapping: one thread per output entry, neighbouring threads on the contiguous axis.
- jvp_step: thread (b, i) computes out[i, b] = sum_j A[i, j] V[j, b]. Threads with
  consecutive b read consecutive V[j, b] (coalesced) and the same A[i, j] (a broadcast).
- vjp_step: thread (j, b) computes out[b, j] = sum_i U[b, i] A[i, j]. Threads with
  consecutive j read consecutive A[i, j] (coalesced) and the same U[b, i]. A^T is never formed.
With B = 1 a (16, 16) block has a single column b: 15 of every 16 threads find no b and
return at once, so each warp of 32 runs two live threads, rows i and i + 1, and each reads a
row of A alone, strided through it. A real gemv gives each row a warp (or a block) whose
threads read consecutive A[i, j] and reduce across the warp. That is where cuBLAS wins, and
why this file shows the mapping rather than replacing the library.

Version 2 (kernels/forward_vs_reverse_v2.py) runs both steps as one tiled matrix product
(kernels/common/tiled_matmul.py: 64 x 64 tiles through shared memory, 4 x 4 outputs a thread
in registers, split-K when few tiles would leave a GPU idle); issue 34 measured these kernels
at 1% of bandwidth, 0.02-0.03x cuBLAS. The host functions below run either (``version``).

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

if __name__ == "__main__":  # python -m backprop_traps.kernels.forward_vs_reverse: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID

THREADS = (16, 16)  # (contiguous axis, other axis): 256 threads per block


# 1. forward mode: one JVP step for a block of tangents, out = A V
@cuda.jit
def jvp_step_kernel(A, V, out):
    # A: M, N; V: N, B; out: M, B. Rows i stride on past grid y's 65,535 blocks.
    b, first = cuda.grid(2)
    if b >= out.shape[1]:
        return
    for i in range(first, out.shape[0], cuda.gridsize(2)[1]):
        acc = A[i, 0] * V[0, b]  # the first term, not a literal: float32 stays float32
        for j in range(1, A.shape[1]):
            acc += A[i, j] * V[j, b]
        out[i, b] = acc


# 2. reverse mode: one VJP step for a block of cotangents, out = U A (A^T never formed)
@cuda.jit
def vjp_step_kernel(U, A, out):
    # U: B, M; A: M, N; out: B, N. Cotangents b stride on past grid y's 65,535 blocks.
    j, first = cuda.grid(2)
    if j >= out.shape[1]:
        return
    for b in range(first, out.shape[0], cuda.gridsize(2)[1]):
        acc = U[b, 0] * A[0, j]
        for i in range(1, A.shape[0]):
            acc += U[b, i] * A[i, j]
        out[b, j] = acc


# launchers: device arrays in, launched -------------------------------------------------------
def _blocks(columns: int, rows: int) -> tuple[int, int]:
    """(x, y) blocks over (columns, rows); y capped at CUDA's 65,535 (the kernels stride on)."""
    return (max(1, -(-columns // THREADS[0])), max(1, min(-(-rows // THREADS[1]), MAX_GRID[1])))


def jvp_step_device(d_A, d_V, d_out):
    """Kernel 1: d_out (M, B) = A V."""
    jvp_step_kernel[_blocks(d_out.shape[1], d_out.shape[0]), THREADS](d_A, d_V, d_out)


def vjp_step_device(d_U, d_A, d_out):
    """Kernel 2: d_out (B, N) = U A."""
    vjp_step_kernel[_blocks(d_out.shape[1], d_out.shape[0]), THREADS](d_U, d_A, d_out)


# host functions: numpy in, numpy out (either version) ------------------------------------


def _steps(version: int):
    """The (JVP, VJP) step launchers of version 1 (this module's) or 2 (forward_vs_reverse_v2)."""
    if version == 2:
        from backprop_traps.kernels import forward_vs_reverse_v2 as v2
        return v2.jvp_step_device, v2.vjp_step_device
    if version != 1:
        raise ValueError(f"version is 1 or 2, not {version!r}")
    return jvp_step_device, vjp_step_device


def jvp_block(As, V: np.ndarray, version=1) -> np.ndarray:
    """Tangents V (m_0, B) pushed through A_1, ..., A_k: (m_k, B). Stays on the device
    between layers; each layer's matrix is copied over once."""
    jvp_step, _ = _steps(version)
    d_V = cuda.to_device(np.ascontiguousarray(V))
    for A in As:  # A_1 first
        d_out = cuda.device_array((A.shape[0], d_V.shape[1]), dtype=d_V.dtype)  # m_i, B
        jvp_step(cuda.to_device(np.ascontiguousarray(A, dtype=d_V.dtype)), d_V, d_out)
        d_V = d_out
    return d_V.copy_to_host()


def vjp_block(As, U: np.ndarray, version=1) -> np.ndarray:
    """Cotangents U (B, m_k) pulled back through A_k, ..., A_1: (B, m_0)."""
    _, vjp_step = _steps(version)
    d_U = cuda.to_device(np.ascontiguousarray(U))
    for A in reversed(As):  # A_k first
        d_out = cuda.device_array((d_U.shape[0], A.shape[1]), dtype=d_U.dtype)  # B, m_{i-1}
        vjp_step(d_U, cuda.to_device(np.ascontiguousarray(A, dtype=d_U.dtype)), d_out)
        d_U = d_out
    return d_U.copy_to_host()


def chain_jvp(As, v: np.ndarray, version=1) -> np.ndarray:
    """J v for one tangent v (m_0,): (m_k,)."""
    return jvp_block(As, v[:, None], version)[:, 0]


def chain_vjp(As, u: np.ndarray, version=1) -> np.ndarray:
    """J^T u for one cotangent u (m_k,): (m_0,)."""
    return vjp_block(As, u[None, :], version)[0]


def jacobian_forward(As, version=1) -> np.ndarray:
    """J (m_k, m_0) by forward mode: all m_0 basis tangents at once."""
    return jvp_block(As, np.eye(As[0].shape[1], dtype=As[0].dtype), version)


def jacobian_reverse(As, version=1) -> np.ndarray:
    """J (m_k, m_0) by reverse mode: all m_k basis cotangents at once."""
    return vjp_block(As, np.eye(As[-1].shape[0], dtype=As[-1].dtype), version)


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("forward_vs_reverse"))
