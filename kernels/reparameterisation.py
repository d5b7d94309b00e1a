"""Gumbel-softmax, Numba CUDA: a fused forward and a fused backward, one block per row (past
CUDA's 2**31 - 1 blocks, each block takes several).

The relaxed categorical sample is y = softmax((logits + gumbel) / tau), row by row, with the
Gumbel noise given (the same contract as the solution). Unfused, a framework writes the
noisy logits, then h = (logits + gumbel) / tau, then the softmax's exponentials, then y:
four N*K buffers and as many passes over memory. Fused:

1. ``gumbel_softmax_forward_kernel``: each thread walks its strided share of the row once,
   forming h = (logits + gumbel) * (1 / tau) on the fly and keeping an ONLINE (max, sum of
   exp(h - max)) pair, rescaled whenever the max grows (the same move as softmax_ce's kernel:
   no exp ever sees a positive argument, so tau = 0.01 and logits ~ 1e4 stay finite). A
   shared-memory tree merges the threads' pairs; a second sweep recomputes h and writes y.
   h is never stored: it reads logits and gumbel (2 N*K) and writes y (N*K).
2. ``gumbel_softmax_backward_kernel``: pass 1 accumulates <dy, y> for the row, one tree reduces
   it, pass 2 writes dlogits = y * (dy - <dy, y>) / tau. It reads dy and y (2 N*K) and
   writes dlogits (N*K); the same array is the gradient with respect to the noise.

The Gaussian estimators of the question need no kernel: each is one elementwise expression
per sample, a single pass that any array library already fuses.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_reparameterisation_kernels.py

Shapes: N rows, K categories, TPB threads per block (a power of two); logits, gumbel, y, dy,
dlogits (N, K); tau a float > 0. Math runs in the logits' dtype (float32 or float64).

Check and time it: python -m backprop_traps.kernels.reparameterisation (from any folder) runs these kernels on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.reparameterisation: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import functools
import math

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID

from backprop_traps.kernels.common.patterns import u64
from backprop_traps.kernels.common.row_reduction import block_max_sum, block_sum, online_add

THREADS_PER_BLOCK = 256


def _check_tpb(tpb: int) -> None:
    if tpb < 1 or tpb & (tpb - 1):
        raise ValueError(f"threads_per_block must be a power of two, got {tpb}")


# 1. the fused forward ---------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def forward_kernel(threads_per_block: int, dtype: np.dtype):
    """Compiled per (TPB, dtype): shared arrays need both at compile time."""
    _check_tpb(threads_per_block)
    tpb, shared_type = threads_per_block, numba.from_dtype(dtype)
    zero, one = dtype.type(0), dtype.type(1)  # constants in the logits' dtype

    @cuda.jit
    def gumbel_softmax_forward_kernel(logits, gumbel, inv_tau, n_rows, k, y):
        # logits, gumbel: N*K (read, flat); inv_tau: 1 / tau in the logits' dtype; n_rows, k: N, K
        # as u64; y: N*K (written)
        tid = cuda.threadIdx.x
        shared_m = cuda.shared.array(tpb, shared_type)
        shared_s = cuda.shared.array(tpb, shared_type)
        # One row per block at a time; a grid smaller than N (CUDA's 2**31 - 1 blocks) strides on.
        row = u64(cuda.blockIdx.x)
        while row < n_rows:
            base = row * k                             # unsigned offsets from the row's start
            # This thread's online (max, sum) over columns tid, tid + TPB, ... It starts from the
            # row's first h with an empty sum, so a thread with no columns (K < TPB) holds a
            # finite max and no merge computes exp(-inf - -inf).
            m = (logits[base] + gumbel[base]) * inv_tau
            s = zero
            for j in range(u64(tid), k, u64(tpb)):
                m, s = online_add(m, s, (logits[base + j] + gumbel[base + j]) * inv_tau, one)
            row_max, total = block_max_sum(shared_m, shared_s, m, s, tid, tpb)  # kernels/common/row_reduction.py
            for j in range(u64(tid), k, u64(tpb)):  # pass 2: h again, from the inputs, never stored
                y[base + j] = math.exp((logits[base + j] + gumbel[base + j]) * inv_tau - row_max) / total
            cuda.syncthreads()  # the row's max and sum are read by all before the next tree
            row += u64(cuda.gridDim.x)

    return gumbel_softmax_forward_kernel


# 2. the fused backward ----------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def backward_kernel(threads_per_block: int, dtype: np.dtype):
    """Compiled per (TPB, dtype), as the forward."""
    _check_tpb(threads_per_block)
    tpb, shared_type = threads_per_block, numba.from_dtype(dtype)
    zero = dtype.type(0)

    @cuda.jit
    def gumbel_softmax_backward_kernel(dy, y, inv_tau, n_rows, k, dlogits):
        # dy, y: N*K (read, flat); inv_tau: 1 / tau; n_rows, k: u64; dlogits: N*K (written; may
        # be dy's buffer)
        tid = cuda.threadIdx.x
        shared = cuda.shared.array(tpb, shared_type)
        row = u64(cuda.blockIdx.x)
        while row < n_rows:  # as the forward
            base = row * k
            acc = zero  # pass 1: this thread's share of <dy, y>
            for j in range(u64(tid), k, u64(tpb)):
                acc += dy[base + j] * y[base + j]
            dot = block_sum(shared, acc, tid, tpb)
            for j in range(u64(tid), k, u64(tpb)):  # pass 2: softmax's backward, then the division's
                dlogits[base + j] = y[base + j] * (dy[base + j] - dot) * inv_tau
            cuda.syncthreads()  # the row's dot is read by all before the next tree
            row += u64(cuda.gridDim.x)

    return gumbel_softmax_backward_kernel


# launchers: device arrays in, launched ---------------------------------------------------------
def _flat(a):
    return a.reshape(a.size)


def _row_blocks(n_rows: int) -> int:
    """One block per row, at most 2**31 - 1 (the kernels stride over the rest)."""
    return max(1, min(n_rows, MAX_GRID[0]))


def forward_device(d_logits, d_gumbel, tau, d_y, threads_per_block=THREADS_PER_BLOCK):
    """Kernel 1: d_y (N, K) from d_logits and d_gumbel (N, K)."""
    dtype = np.dtype(d_logits.dtype)
    (n, k) = d_logits.shape
    forward_kernel(threads_per_block, dtype)[_row_blocks(n), threads_per_block](
        _flat(d_logits), _flat(d_gumbel), dtype.type(1.0 / tau), u64(n), u64(k), _flat(d_y))


def backward_device(d_dy, d_y, tau, d_dlogits, threads_per_block=THREADS_PER_BLOCK):
    """Kernel 2: d_dlogits (N, K) from d_dy and d_y (N, K)."""
    dtype = np.dtype(d_y.dtype)
    (n, k) = d_y.shape
    backward_kernel(threads_per_block, dtype)[_row_blocks(n), threads_per_block](
        _flat(d_dy), _flat(d_y), dtype.type(1.0 / tau), u64(n), u64(k), _flat(d_dlogits))


# host functions: numpy in, numpy out ---------------------------------------------------------
def gumbel_softmax_forward(logits, gumbel, tau, threads_per_block=THREADS_PER_BLOCK):
    """y as the solution's ``gumbel_softmax_forward``, in the logits' dtype."""
    logits = np.ascontiguousarray(logits)  # N, K
    dtype, (n, k) = logits.dtype, logits.shape
    if k < 1:
        raise ValueError("a softmax over zero categories is undefined")
    gumbel = np.ascontiguousarray(gumbel, dtype=dtype)  # N, K
    y = cuda.device_array((n, k), dtype=dtype)
    if n:
        forward_device(cuda.to_device(logits), cuda.to_device(gumbel), tau, y, threads_per_block)
    return y.copy_to_host()


def gumbel_softmax_backward(dy, y, tau, threads_per_block=THREADS_PER_BLOCK):
    """dlogits as the solution's ``gumbel_softmax_backward``, in y's dtype."""
    y = np.ascontiguousarray(y)  # N, K
    dtype, (n, k) = y.dtype, y.shape
    dy = np.ascontiguousarray(dy, dtype=dtype)  # N, K
    dlogits = cuda.device_array((n, k), dtype=dtype)
    if n:
        backward_device(cuda.to_device(dy), cuda.to_device(y), tau, dlogits, threads_per_block)
    return dlogits.copy_to_host()


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("reparameterisation"))
