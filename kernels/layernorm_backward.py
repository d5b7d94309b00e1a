"""LayerNorm over the last axis, Numba CUDA: a fused forward and a fused one-pass backward.

The plan of llm.c's LayerNorm kernels (dev/cuda/layernorm_forward.cu and
layernorm_backward.cu): each row is reduced by one thread block with a shared-memory tree,
the statistics are cached as two numbers per row (mean, rstd), and the backward recomputes
x-hat from them rather than keeping it.

1. ``layernorm_forward_kernel``, one block per row (past CUDA's 2**31 - 1 blocks, several). Pass 1: each thread runs Welford's
   update, a running (count, mean, M2), over its strided share of the row; the tree merges
   the threads' triples with Chan's formula (the same move as softmax's online max and sum:
   partial statistics that merge exactly). One pass over x, and no cancellation: the
   shortcut E[x^2] - E[x]^2 loses every digit of a variance far below mean^2 (fp32, mean
   1000, std 0.1). Thread 0 writes mean and rstd = 1 / sqrt(M2 / D + eps), the biased
   variance with eps inside the root; pass 2 writes y.
2. ``layernorm_backward_kernel``, G blocks, each taking rows b, b + G, ... Pass 1 over a row
   accumulates BOTH sums the backward needs, of g = dy * gamma and of g * x-hat, and one
   tree reduces the two together. Pass 2 writes dx = rstd * (g - mean(g) - x-hat *
   mean(g * x-hat)) and adds dy * x-hat and dy into the block's own row of partial sums:
   each thread owns the same columns in every row, so no two threads touch one address.
3. ``param_sum_kernel``: one thread per feature adds the G partial sums into dgamma and
   dbeta, always in the same order. No atomics anywhere, so every run gives the same bits
   (llm.c's later kernels do the same: per-block scratch, then one reduction).

Memory traffic per op (each array once): the forward reads x (N*D) and writes y (N*D) plus
2N statistics; the backward reads dy and x and writes dx (3 N*D) plus 4 G*D partials. Pass 2
re-reads the row it just reduced: for D up to a few thousand that hits the cache.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_layernorm_backward_kernels.py

Shapes: N rows, D features, TPB threads per block (a power of two), G backward blocks.
x, y, dy, dx (N, D); gamma, beta, dgamma, dbeta (D,); mean, rstd (N,); partials (2, G, D).
Math runs in x's dtype (float32 or float64).

Version 2 (kernels/layernorm_backward_v2.py) keeps this plan and makes it fast: a thread
holds 4 features of the row in registers (one 128-bit load), the row sums are warp shuffles,
and the backward's dgamma/dbeta shares stay in registers across rows (issue 34 measured this
file's forward at 30% and its backward at 21% of copy bandwidth). It takes D a multiple of 4, at most 2,048.

Check and time it: python -m backprop_traps.kernels.layernorm_backward (from any folder) runs these kernels on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.layernorm_backward: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import functools
import math

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID

THREADS_PER_BLOCK = 256
MAX_BACKWARD_BLOCKS = 512  # G: enough blocks to fill a GPU, few partial rows to add up
PARAM_THREADS = 256


def _check_tpb(tpb: int) -> None:
    if tpb < 1 or tpb & (tpb - 1):
        raise ValueError(f"threads_per_block must be a power of two, got {tpb}")


@cuda.jit(device=True)
def welford_merge(n_a, mean_a, m2_a, n_b, mean_b, m2_b):
    """Chan's merge of two partial (count, mean, sum of squared deviations) triples."""
    n = n_a + n_b
    if n == 0:
        return n_a, mean_a, m2_a  # both empty
    delta = mean_b - mean_a
    return n, mean_a + delta * (n_b / n), m2_a + m2_b + delta * delta * (n_a * n_b / n)


# 1. the fused forward ---------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def forward_kernel(threads_per_block: int, dtype: np.dtype):
    """Compiled per (TPB, dtype): shared arrays need both at compile time."""
    _check_tpb(threads_per_block)
    tpb, shared_type = threads_per_block, numba.from_dtype(dtype)
    zero, one = dtype.type(0), dtype.type(1)  # constants in x's dtype: float32 stays float32

    @cuda.jit
    def layernorm_forward_kernel(x, gamma, beta, eps, n_features, y, mean, rstd):
        # x: N, D; gamma, beta: D; eps, n_features (D): scalars in x's dtype;
        # y: N, D; mean, rstd: N (written)
        tid = cuda.threadIdx.x
        s_count = cuda.shared.array(tpb, shared_type)
        s_mean = cuda.shared.array(tpb, shared_type)
        s_m2 = cuda.shared.array(tpb, shared_type)
        # One row per block at a time; a grid smaller than N (CUDA's 2**31 - 1 blocks) strides on.
        for row in range(cuda.blockIdx.x, x.shape[0], cuda.gridDim.x):
            count, m, m2 = zero, zero, zero  # this thread's Welford state over columns tid, tid + TPB, ...
            for j in range(tid, x.shape[1], tpb):
                v = x[row, j]
                count += one
                delta = v - m
                m += delta / count
                m2 += delta * (v - m)

            s_count[tid], s_mean[tid], s_m2[tid] = count, m, m2
            cuda.syncthreads()
            stride = tpb // 2
            while stride > 0:
                if tid < stride:
                    c, mm, q = welford_merge(s_count[tid], s_mean[tid], s_m2[tid],
                                             s_count[tid + stride], s_mean[tid + stride], s_m2[tid + stride])
                    s_count[tid], s_mean[tid], s_m2[tid] = c, mm, q
                cuda.syncthreads()
                stride //= 2
            row_mean = s_mean[0]
            row_rstd = one / math.sqrt(s_m2[0] / n_features + eps)  # biased variance; eps inside the root
            if tid == 0:
                mean[row] = row_mean
                rstd[row] = row_rstd
            for j in range(tid, x.shape[1], tpb):  # pass 2: the row again, from the cache
                y[row, j] = (x[row, j] - row_mean) * row_rstd * gamma[j] + beta[j]
            cuda.syncthreads()  # every thread has read the row's statistics before the next tree

    return layernorm_forward_kernel


# 2. the fused one-pass backward, and 3. the per-feature sums ---------------------------------
@functools.lru_cache(maxsize=None)
def backward_kernel(threads_per_block: int, dtype: np.dtype):
    """Compiled per (TPB, dtype), as the forward."""
    _check_tpb(threads_per_block)
    tpb, shared_type = threads_per_block, numba.from_dtype(dtype)
    zero = dtype.type(0)

    @cuda.jit
    def layernorm_backward_kernel(dy, x, gamma, mean, rstd, n_features, dx, partials):
        # dy, x: N, D; gamma: D; mean, rstd: N; n_features: D in x's dtype;
        # dx: N, D (written); partials: 2, G, D (written: this block's sums over its rows of
        # dy * x-hat, index 0, and of dy, index 1)
        block = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        n_rows, d = x.shape
        for j in range(tid, d, tpb):
            partials[0, block, j] = zero
            partials[1, block, j] = zero
        s_g = cuda.shared.array(tpb, shared_type)
        s_gx = cuda.shared.array(tpb, shared_type)
        for row in range(block, n_rows, cuda.gridDim.x):
            mu, r = mean[row], rstd[row]
            sum_g, sum_gx = zero, zero  # pass 1: both row sums at once
            for j in range(tid, d, tpb):
                g = dy[row, j] * gamma[j]
                sum_g += g
                sum_gx += g * (x[row, j] - mu) * r
            s_g[tid], s_gx[tid] = sum_g, sum_gx
            cuda.syncthreads()
            stride = tpb // 2
            while stride > 0:
                if tid < stride:
                    s_g[tid] += s_g[tid + stride]
                    s_gx[tid] += s_gx[tid + stride]
                cuda.syncthreads()
                stride //= 2
            mean_g, mean_gx = s_g[0] / n_features, s_gx[0] / n_features
            cuda.syncthreads()  # every thread has read the sums before the next row overwrites them
            for j in range(tid, d, tpb):  # pass 2: dx, and this block's share of dgamma, dbeta
                dy_j = dy[row, j]
                xhat = (x[row, j] - mu) * r
                dx[row, j] = r * (dy_j * gamma[j] - mean_g - xhat * mean_gx)
                partials[0, block, j] += dy_j * xhat
                partials[1, block, j] += dy_j

    return layernorm_backward_kernel


@cuda.jit
def param_sum_kernel(partials, dgamma, dbeta):
    # partials: 2, G, D; dgamma, dbeta: D (written). Thread j adds column j's G partial sums.
    j = cuda.grid(1)
    if j < dgamma.size:
        acc_gamma, acc_beta = partials[0, 0, j], partials[1, 0, j]
        for b in range(1, partials.shape[1]):
            acc_gamma += partials[0, b, j]
            acc_beta += partials[1, b, j]
        dgamma[j] = acc_gamma
        dbeta[j] = acc_beta


# launchers: device arrays in, launched ---------------------------------------------------------
def backward_blocks(n_rows: int) -> int:
    """G, the backward's blocks: one per row up to MAX_BACKWARD_BLOCKS."""
    return max(1, min(n_rows, MAX_BACKWARD_BLOCKS))


def param_launch(n_features: int) -> tuple[int, int]:
    """(blocks, threads) for ``param_sum_kernel``: whole warps, no more threads than D needs."""
    threads = min(PARAM_THREADS, 32 * math.ceil(max(n_features, 1) / 32))
    return max(1, math.ceil(n_features / threads)), threads


def forward_device(d_x, d_gamma, d_beta, eps, d_y, d_mean, d_rstd, threads_per_block=THREADS_PER_BLOCK):
    """Kernel 1: d_y (N, D), d_mean and d_rstd (N,). One block per row, at most 2**31 - 1
    blocks (the kernel strides on)."""
    dtype, (n, d) = np.dtype(d_x.dtype), d_x.shape
    forward_kernel(threads_per_block, dtype)[max(1, min(n, MAX_GRID[0])), threads_per_block](
        d_x, d_gamma, d_beta, dtype.type(eps), dtype.type(d), d_y, d_mean, d_rstd)


def backward_device(d_dy, d_x, d_gamma, d_mean, d_rstd, d_dx, d_partials, d_dgamma, d_dbeta,
                    threads_per_block=THREADS_PER_BLOCK):
    """Kernels 2 and 3: d_dx (N, D), d_dgamma and d_dbeta (D,), through d_partials (2, G, D):
    G blocks (``backward_blocks``), each taking rows b, b + G, ..."""
    dtype, d = np.dtype(d_x.dtype), d_x.shape[1]
    backward_kernel(threads_per_block, dtype)[d_partials.shape[1], threads_per_block](
        d_dy, d_x, d_gamma, d_mean, d_rstd, dtype.type(d), d_dx, d_partials)
    param_sum_kernel[param_launch(d)](d_partials, d_dgamma, d_dbeta)


# host functions: numpy in, numpy out ---------------------------------------------------------
def layernorm_forward(x, gamma, beta, eps, threads_per_block=THREADS_PER_BLOCK):
    """(y, mean, rstd) as the solution's ``layernorm_forward``, in x's dtype."""
    x = np.ascontiguousarray(x)  # N, D
    dtype, (n, d) = x.dtype, x.shape
    gamma, beta = (np.ascontiguousarray(a, dtype=dtype) for a in (gamma, beta))  # D
    y = cuda.device_array((n, d), dtype=dtype)
    mean, rstd = cuda.device_array(n, dtype=dtype), cuda.device_array(n, dtype=dtype)
    if n:
        forward_device(cuda.to_device(x), cuda.to_device(gamma), cuda.to_device(beta), eps, y, mean, rstd,
                       threads_per_block)
    return y.copy_to_host(), mean.copy_to_host(), rstd.copy_to_host()


def layernorm_backward(dy, x, gamma, mean, rstd, threads_per_block=THREADS_PER_BLOCK, blocks=None):
    """(dx, dgamma, dbeta) as the solution's ``layernorm_backward``, in x's dtype.
    ``blocks`` is G (default ``backward_blocks(N)``); a G below N gives blocks several rows."""
    x = np.ascontiguousarray(x)  # N, D
    dtype, (n, d) = x.dtype, x.shape
    dy = np.ascontiguousarray(dy, dtype=dtype)  # N, D
    gamma = np.ascontiguousarray(gamma, dtype=dtype)  # D
    mean, rstd = (np.ascontiguousarray(a, dtype=dtype) for a in (mean, rstd))  # N
    if n == 0:
        return np.zeros((0, d), dtype), np.zeros(d, dtype), np.zeros(d, dtype)
    g = blocks or backward_blocks(n)
    dx = cuda.device_array((n, d), dtype=dtype)
    partials = cuda.device_array((2, g, d), dtype=dtype)
    dgamma, dbeta = cuda.device_array(d, dtype=dtype), cuda.device_array(d, dtype=dtype)
    backward_device(cuda.to_device(dy), cuda.to_device(x), cuda.to_device(gamma), cuda.to_device(mean),
                    cuda.to_device(rstd), dx, partials, dgamma, dbeta, threads_per_block)
    return dx.copy_to_host(), dgamma.copy_to_host(), dbeta.copy_to_host()


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("layernorm_backward"))
