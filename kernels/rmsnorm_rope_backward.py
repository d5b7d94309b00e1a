"""RMSNorm over the last axis and rotary position embeddings (RoPE, half-split), Numba CUDA:
forward and backward of each.

RMSNorm follows kernels/layernorm_backward.py's plan with one sum fewer: no mean, so a row
needs one reduction in each direction, not two.

1. ``rmsnorm_forward_kernel``, one block per row (past CUDA's 2**31 - 1 blocks, the grid
   strides on), as many threads as the row has features up to 256 (``row_threads``). Pass 1: each thread adds the squares of its strided share of the row;
   ``block_sum`` (kernels/common/row_reduction.py: warp shuffles, then the warps' sums) gives every
   thread the row's total. rstd = 1 / sqrt(total / D + eps), eps inside the root; thread 0
   writes it; pass 2 writes y = x * rstd * gamma.
2. ``rmsnorm_backward_kernel``, G blocks, each taking rows b, b + G, ... Pass 1 adds up
   g * x-hat (g = dy * gamma); pass 2 writes dx = rstd * (g - x-hat * mean(g * x-hat)), with no
   mean(g) term (nothing was subtracted in the forward), and adds dy * x-hat into the block's
   own row of partial sums: each thread owns the same columns in every row, so no two threads
   touch one address.
3. ``dgamma_sum_kernel``: one thread per feature adds the G partial sums, always in the same
   order. No atomics: every run gives the same bits.
4. ``rope_kernel``, one thread per pair (n, i), i < D/2: it reads x[n, i] and x[n, i + D/2],
   turns them by the pair's angle, and writes both. The cosines and sines come from a table
   with a line per distinct position (``rope_tables``: computed once on the host, as Hugging
   Face's and Liger's cos/sin caches; no sine on the device, whose float32 version carries a
   float64 slow path for huge arguments). The forward launches it with sign = +1, the backward
   with sign = -1: a rotation's transpose is the rotation by -theta, the same cosine and the
   opposite sine, so the backward needs the positions and nothing else.

Memory traffic per op (each array once): RMSNorm's forward reads x (N*D) and writes y (N*D)
plus N values of rstd; its backward reads dy and x and writes dx (3 N*D) plus G*D partials;
RoPE reads N*D and writes N*D (and N indices, and the tables: U*D values, cached), both ways. All four are memory-bound.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_rmsnorm_rope_backward_kernels.py
Check and time it: python -m backprop_traps.kernels.rmsnorm_rope_backward (from any folder) runs
these kernels on the benchmark's tiny cases in float64 and float32 against the solution
notebook (kernels/runtime/self_check.py; the simulator without a GPU).

Shapes: N rows, D features (even for RoPE), TPB threads per block (a power of two), G
backward blocks. x, y, dy, dx (N, D), flat; gamma, dgamma (D,); rstd (N,); pos int64 (N,);
partials (G, D); index (N,) int64; cos, sin (U, D/2), U distinct positions. Math runs in x's
dtype (float32 or float64).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.rmsnorm_rope_backward: the simulator without a GPU
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import functools
import math

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import u64
from backprop_traps.kernels.common.row_reduction import block_sum

THREADS_PER_BLOCK = 256  # the most a row gets; a short row (Llama's D = 128) gets fewer: row_threads
MAX_BACKWARD_BLOCKS = 2048  # G: 2048 x 128 threads fill an H100's 132 SMs; G * D partials stay small
ELEMENTWISE_THREADS = 256  # RoPE and the per-feature sums


def _check_tpb(tpb: int) -> None:
    if tpb < 1 or tpb & (tpb - 1):
        raise ValueError(f"threads_per_block must be a power of two, got {tpb}")


# 1. RMSNorm's forward ------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def compile_rmsnorm_forward(threads_per_block: int, dtype: np.dtype):
    """Compiled per (TPB, dtype): the shared array needs both at compile time."""
    _check_tpb(threads_per_block)
    tpb, shared_type = threads_per_block, numba.from_dtype(dtype)
    zero, one = dtype.type(0), dtype.type(1)  # constants in x's dtype: float32 stays float32

    @cuda.jit
    def rmsnorm_forward_kernel(x, gamma, eps, n_rows, d, inv_d, y, rstd):
        # x: N*D (flat); gamma: D; eps, inv_d (1 / D): x's dtype; n_rows, d: u64;
        # y: N*D (written); rstd: N (written)
        tid = cuda.threadIdx.x
        shared = cuda.shared.array(tpb, shared_type)
        row = u64(cuda.blockIdx.x)
        while row < n_rows:  # one row per block at a time
            base = row * d
            acc = zero  # pass 1: this thread's share of the sum of squares
            for j in range(u64(tid), d, u64(tpb)):
                v = x[base + j]
                acc += v * v
            r = one / math.sqrt(block_sum(shared, acc, tid, tpb) * inv_d + eps)  # eps inside the root
            if tid == 0:
                rstd[row] = r
            for j in range(u64(tid), d, u64(tpb)):  # pass 2: the row again
                y[base + j] = x[base + j] * r * gamma[j]
            cuda.syncthreads()  # every thread has read the sum before the next row's reduction
            row += u64(cuda.gridDim.x)

    return rmsnorm_forward_kernel


# 2. RMSNorm's backward, and 3. the per-feature sums ------------------------------------------
@functools.lru_cache(maxsize=None)
def compile_rmsnorm_backward(threads_per_block: int, dtype: np.dtype):
    """Compiled per (TPB, dtype), as the forward."""
    _check_tpb(threads_per_block)
    tpb, shared_type = threads_per_block, numba.from_dtype(dtype)
    zero = dtype.type(0)

    @cuda.jit
    def rmsnorm_backward_kernel(dy, x, gamma, rstd, n_rows, d, inv_d, dx, partials):
        # dy, x: N*D (flat); gamma: D; rstd: N; n_rows, d: u64; inv_d: 1 / D in x's dtype;
        # dx: N*D (written); partials: G*D (written: this block's sums of dy * x-hat)
        block = u64(cuda.blockIdx.x)
        tid = cuda.threadIdx.x
        own = block * d  # this block's row of partial sums
        for j in range(u64(tid), d, u64(tpb)):
            partials[own + j] = zero
        shared = cuda.shared.array(tpb, shared_type)
        row = block
        while row < n_rows:
            base, r = row * d, rstd[row]
            acc = zero  # pass 1: this thread's share of sum(g * x-hat)
            for j in range(u64(tid), d, u64(tpb)):
                acc += dy[base + j] * gamma[j] * x[base + j] * r
            mean_gx = block_sum(shared, acc, tid, tpb) * inv_d
            for j in range(u64(tid), d, u64(tpb)):  # pass 2: dx, and this block's share of dgamma
                dy_j = dy[base + j]
                xhat = x[base + j] * r
                dx[base + j] = r * (dy_j * gamma[j] - xhat * mean_gx)  # no mean(g): no mean was taken
                partials[own + j] += dy_j * xhat
            cuda.syncthreads()  # the sum is read by all before the next row's reduction
            row += u64(cuda.gridDim.x)

    return rmsnorm_backward_kernel


@cuda.jit
def dgamma_sum_kernel(partials, n_blocks, d, dgamma):
    # partials: G*D (flat); n_blocks (G), d: u64; dgamma: D (written). Thread j adds column j.
    j = u64(cuda.grid(1))
    if j < d:
        acc = partials[j]
        for b in range(u64(1), n_blocks):
            acc += partials[b * d + j]
        dgamma[j] = acc


# 4. RoPE, both ways ----------------------------------------------------------------------------
@cuda.jit
def rope_kernel(x, index, cos, sin, sign, n_rows, d, y):
    # x: N*D (flat); index: N int64, row n's line in the tables; cos, sin: U*(D/2) (flat), the
    # angles' cosines and sines in x's dtype; sign: +1 forward, -1 backward, in x's dtype;
    # n_rows, d: u64; y: N*D (written). Thread t turns pair i of row n, t = n * (D/2) + i.
    t = u64(cuda.grid(1))
    half = d // u64(2)
    if t < n_rows * half:
        n = t // half
        i = t - n * half
        line = u64(index[n]) * half + i
        c, s = cos[line], sign * sin[line]  # -theta has the same cosine and the opposite sine
        a, b = x[n * d + i], x[n * d + i + half]
        y[n * d + i] = a * c - b * s  # the first half: x1 cos - x2 sin
        y[n * d + i + half] = b * c + a * s  # the second: x2 cos + x1 sin


def rope_tables(pos, d: int, base: float, dtype):
    """(index (N,), cos, sin (U, D/2)): one line of cosines and sines per distinct position,
    computed on the host in float64 and stored in x's dtype, as Hugging Face's and Liger's RoPE
    keep a cos/sin cache. A float32 angle pos * inv_freq would be off by about pos * 6e-8
    radians; the table's are rounded once, whatever the position."""
    positions, index = np.unique(np.asarray(pos, dtype=np.int64), return_inverse=True)
    theta = np.outer(positions.astype(np.float64), float(base) ** (-2.0 * np.arange(d // 2) / d))  # U, D/2
    return (index.astype(np.int64).reshape(-1), np.cos(theta).astype(dtype), np.sin(theta).astype(dtype))


# launchers: device arrays in, launched ---------------------------------------------------------
def backward_blocks(n_rows: int) -> int:
    """G, the backward's blocks: one per row up to MAX_BACKWARD_BLOCKS."""
    return max(1, min(n_rows, MAX_BACKWARD_BLOCKS))


def row_threads(d: int) -> int:
    """A row's block: the power of two at or above D, from a warp to THREADS_PER_BLOCK (a block
    of 256 for a row of 128 would leave half its threads idle)."""
    return min(THREADS_PER_BLOCK, max(32, 1 << max(d - 1, 0).bit_length()))


def _elementwise(count: int) -> tuple[int, int]:
    return max(1, math.ceil(count / ELEMENTWISE_THREADS)), ELEMENTWISE_THREADS


def rmsnorm_forward_device(d_x, d_gamma, eps, d_y, d_rstd, threads_per_block=None):
    """Kernel 1: d_y (N, D) and d_rstd (N,) from d_x (N, D); one block per row, the grid capped."""
    dtype, (n, d) = np.dtype(d_x.dtype), d_x.shape
    threads_per_block = threads_per_block or row_threads(d)
    compile_rmsnorm_forward(threads_per_block, dtype)[max(1, min(n, MAX_GRID[0])), threads_per_block](
        d_x.reshape(n * d), d_gamma, dtype.type(eps), np.uint64(n), np.uint64(d), dtype.type(1.0 / d),
        d_y.reshape(n * d), d_rstd)


def rmsnorm_backward_device(d_dy, d_x, d_gamma, d_rstd, d_dx, d_partials, d_dgamma, threads_per_block=None):
    """Kernels 2 and 3: d_dx (N, D) and d_dgamma (D,), through d_partials (G, D)."""
    dtype, (n, d), g = np.dtype(d_x.dtype), d_x.shape, d_partials.shape[0]
    threads_per_block = threads_per_block or row_threads(d)
    compile_rmsnorm_backward(threads_per_block, dtype)[g, threads_per_block](
        d_dy.reshape(n * d), d_x.reshape(n * d), d_gamma, d_rstd, np.uint64(n), np.uint64(d),
        dtype.type(1.0 / d), d_dx.reshape(n * d), d_partials.reshape(g * d))
    dgamma_sum_kernel[_elementwise(d)](d_partials.reshape(g * d), np.uint64(g), np.uint64(d), d_dgamma)


def rope_device(d_x, d_index, d_cos, d_sin, sign, d_y):
    """Kernel 4: d_y (N, D) = d_x turned by sign * theta, one thread per pair; the angles from
    the tables of ``rope_tables``."""
    dtype, (n, d) = np.dtype(d_x.dtype), d_x.shape
    rope_kernel[_elementwise(n * (d // 2))](d_x.reshape(n * d), d_index, d_cos.reshape(d_cos.size),
                                            d_sin.reshape(d_sin.size), dtype.type(sign), np.uint64(n),
                                            np.uint64(d), d_y.reshape(n * d))


# host functions: numpy in, numpy out ---------------------------------------------------------
def rmsnorm_forward(x, gamma, eps, threads_per_block=None):
    """(y, rstd) as the solution's ``rmsnorm_forward``, in x's dtype."""
    x = np.ascontiguousarray(x)  # N, D
    dtype, (n, d) = x.dtype, x.shape
    y, rstd = cuda.device_array((n, d), dtype=dtype), cuda.device_array(n, dtype=dtype)
    if n and d:
        rmsnorm_forward_device(cuda.to_device(x), cuda.to_device(np.ascontiguousarray(gamma, dtype=dtype)),
                               eps, y, rstd, threads_per_block)
    return y.copy_to_host(), rstd.copy_to_host()


def rmsnorm_backward(dy, x, gamma, rstd, threads_per_block=None, blocks=None):
    """(dx, dgamma) as the solution's ``rmsnorm_backward``, in x's dtype. ``blocks`` is G
    (default ``backward_blocks(N)``); a G below N gives blocks several rows."""
    x = np.ascontiguousarray(x)  # N, D
    dtype, (n, d) = x.dtype, x.shape
    if n == 0 or d == 0:
        return np.zeros((n, d), dtype), np.zeros(d, dtype)
    g = blocks or backward_blocks(n)
    dx, dgamma = cuda.device_array((n, d), dtype=dtype), cuda.device_array(d, dtype=dtype)
    partials = cuda.device_array((g, d), dtype=dtype)
    rmsnorm_backward_device(*(cuda.to_device(np.ascontiguousarray(a, dtype=dtype)) for a in (dy, x, gamma, rstd)),
                            dx, partials, dgamma, threads_per_block)
    return dx.copy_to_host(), dgamma.copy_to_host()


def _rope(x, pos, base, sign):
    x = np.ascontiguousarray(x)  # N, D
    y = cuda.device_array(x.shape, dtype=x.dtype)
    if x.size:
        rope_device(cuda.to_device(x), *(cuda.to_device(a) for a in rope_tables(pos, x.shape[1], base, x.dtype)),
                    sign, y)
    return y.copy_to_host()


def rope_forward(x, pos, base):
    """y as the solution's ``rope_forward``, in x's dtype."""
    return _rope(x, pos, base, 1.0)


def rope_backward(dy, pos, base):
    """dx as the solution's ``rope_backward``: the same kernel, turning by -theta."""
    return _rope(dy, pos, base, -1.0)


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("rmsnorm_rope_backward"))
