"""LayerNorm, version 2: a row in registers, 128-bit loads, warp-shuffle sums (issue 34).

Version 1 (kernels/layernorm_backward.py) teaches the plan: a block per row, Welford's
triples merged in a shared-memory tree, a backward that computes both row sums in one pass
and keeps per-block partial sums of dgamma and dbeta (no atomics). Issue 34 measured its
forward at 30% and its backward at 21% of copy bandwidth. What changed:

  - a thread owns 4 neighbouring features of the row (D / 4 threads a block, D <= 2,048):
    it reads them in ONE 128-bit load and keeps them in registers, so the forward reads x
    once, computes the mean, then the variance as the mean of (x - mean)^2 from the same
    registers (two passes over registers, not over memory: no E[x^2] - E[x]^2 cancellation,
    no division per element as Welford's update has), and writes y in one 128-bit store;
  - a row's sums are warp shuffles (a butterfly: every lane ends with the sum), then one
    shared slot per warp (``block_allsum2``): two barriers a reduction, not eight;
  - the backward keeps its 4 features' shares of dgamma and dbeta in registers across all
    its block's rows, and writes them once (version 1 added them into global memory every
    row); ``param_sum_kernel`` then reads the G partial rows 128 bits at a time, 8 lanes a
    column group, merged in a shared tree.
  - flat arrays, unsigned offsets; blocks stride over rows (G of them).

Traffic per op: forward x read once, y written once (2 N*D); backward dy and x read once,
dx written once (3 N*D), plus 2 G*D partials. What the static table predicts
(benchmarks/results/kernels_static.md): 128-bit loads, no 64-bit division, no local memory.

Shapes: N rows, D features (a multiple of 4, at most 2,048; the launchers check, version 1
takes any D), G blocks. Flat arrays: x, y, dy, dx (N*D,); gamma, beta, dgamma, dbeta (D,);
mean, rstd (N,); partials (2*G*D,). Tests: tests/kernels/test_layernorm_backward_kernels.py.
"""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import VECTOR, WARP, aligned, block_allsum2, bounded_jit, load4, store4, u64

BLOCKS = 512           # G: rows strided over this many blocks (4 a multiprocessor; the partials stay small)
MAX_THREADS = 512      # a block's threads at most (D <= 2,048): ptxas keeps them to 128 registers
SUM_LANES = 8          # param_sum_kernel's block: (32 column groups, 8 lanes over the G rows)
SUM_TILE = WARP * VECTOR  # its columns: 128 (a shared shape is a constant, not a product)


@bounded_jit(MAX_THREADS, 1)
def layernorm_forward_kernel(x, gamma, beta, eps, n_rows, d, y, mean, rstd):
    # x: N*D; gamma, beta: D; eps in x's dtype; n_rows, d: u64; y: N*D, mean, rstd: N (written).
    # Thread t: features 4t .. 4t + 3 of rows blockIdx.x, + gridDim.x, ...
    tid = cuda.threadIdx.x
    j = u64(tid) * u64(VECTOR)
    zero, one = x.dtype.type(0), x.dtype.type(1)
    shared = cuda.shared.array((2, WARP), x.dtype)
    mine = j < d                                          # the last threads of a block may own none
    g0, g1, g2, g3, b0, b1, b2, b3 = zero, zero, zero, zero, zero, zero, zero, zero
    if mine:
        g0, g1, g2, g3 = load4(gamma, j)                  # kept in registers for every row
        b0, b1, b2, b3 = load4(beta, j)
    inv_d = one / x.dtype.type(d)
    row = u64(cuda.blockIdx.x)
    while row < n_rows:                                   # the same for the whole block
        v0, v1, v2, v3 = zero, zero, zero, zero
        if mine:
            v0, v1, v2, v3 = load4(x, row * d + j)        # the row's only read
        total, _ = block_allsum2(shared, v0 + v1 + v2 + v3, zero, zero, tid, cuda.blockDim.x)
        mu = total * inv_d
        e0, e1, e2, e3 = v0 - mu, v1 - mu, v2 - mu, v3 - mu
        sq = e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3 if mine else zero
        ss, _ = block_allsum2(shared, sq, zero, zero, tid, cuda.blockDim.x)
        r = one / math.sqrt(ss * inv_d + eps)             # biased variance; eps inside the root
        if tid == 0:
            mean[row], rstd[row] = mu, r
        if mine:
            store4(y, row * d + j, e0 * r * g0 + b0, e1 * r * g1 + b1, e2 * r * g2 + b2, e3 * r * g3 + b3)
        row += u64(cuda.gridDim.x)


@bounded_jit(MAX_THREADS, 1)
def layernorm_backward_kernel(dy, x, gamma, mean, rstd, n_rows, d, dx, partials):
    # dy, x: N*D; gamma: D; mean, rstd: N; n_rows, d: u64; dx: N*D (written); partials: 2*G*D
    # (written: block b's sums over its rows of dy * x-hat, row 0, and of dy, row 1).
    tid = cuda.threadIdx.x
    j = u64(tid) * u64(VECTOR)
    zero, one = x.dtype.type(0), x.dtype.type(1)
    shared = cuda.shared.array((2, WARP), x.dtype)
    mine = j < d
    g0, g1, g2, g3 = zero, zero, zero, zero
    if mine:
        g0, g1, g2, g3 = load4(gamma, j)
    sg0, sg1, sg2, sg3, sb0, sb1, sb2, sb3 = zero, zero, zero, zero, zero, zero, zero, zero
    inv_d = one / x.dtype.type(d)
    row = u64(cuda.blockIdx.x)
    while row < n_rows:
        mu, r = mean[row], rstd[row]
        e0, e1, e2, e3, v0, v1, v2, v3 = zero, zero, zero, zero, zero, zero, zero, zero
        if mine:
            e0, e1, e2, e3 = load4(dy, row * d + j)
            v0, v1, v2, v3 = load4(x, row * d + j)
        h0, h1, h2, h3 = (v0 - mu) * r, (v1 - mu) * r, (v2 - mu) * r, (v3 - mu) * r   # x-hat
        a0, a1, a2, a3 = e0 * g0, e1 * g1, e2 * g2, e3 * g3                         # g = dy * gamma
        sum_g, sum_gh = block_allsum2(shared, a0 + a1 + a2 + a3, a0 * h0 + a1 * h1 + a2 * h2 + a3 * h3,
                                      zero, tid, cuda.blockDim.x)
        mg, mgh = sum_g * inv_d, sum_gh * inv_d
        if mine:
            store4(dx, row * d + j, r * (a0 - mg - h0 * mgh), r * (a1 - mg - h1 * mgh),
                   r * (a2 - mg - h2 * mgh), r * (a3 - mg - h3 * mgh))
        sg0, sg1, sg2, sg3 = sg0 + e0 * h0, sg1 + e1 * h1, sg2 + e2 * h2, sg3 + e3 * h3
        sb0, sb1, sb2, sb3 = sb0 + e0, sb1 + e1, sb2 + e2, sb3 + e3
        row += u64(cuda.gridDim.x)
    if mine:
        blocks, b = u64(cuda.gridDim.x), u64(cuda.blockIdx.x)
        store4(partials, b * d + j, sg0, sg1, sg2, sg3)
        store4(partials, (blocks + b) * d + j, sb0, sb1, sb2, sb3)


@cuda.jit
def param_sum_kernel(partials, blocks, d, dgamma, dbeta):
    # partials: 2*G*D; blocks (G), d: u64; dgamma, dbeta: D (written). Block (32, 8): thread
    # (t, l) adds rows l, l + 8, ... of columns 4t .. 4t + 3 of its 128-column tile.
    t, lane = cuda.threadIdx.x, cuda.threadIdx.y
    j = u64(cuda.blockIdx.x * SUM_TILE + t * VECTOR)
    zero = partials.dtype.type(0)
    s_g = cuda.shared.array((SUM_LANES, SUM_TILE), partials.dtype)
    s_b = cuda.shared.array((SUM_LANES, SUM_TILE), partials.dtype)
    a0, a1, a2, a3, c0, c1, c2, c3 = zero, zero, zero, zero, zero, zero, zero, zero
    if j < d:
        for g in range(u64(lane), blocks, u64(SUM_LANES)):
            p0, p1, p2, p3 = load4(partials, g * d + j)
            q0, q1, q2, q3 = load4(partials, (blocks + g) * d + j)
            a0, a1, a2, a3, c0, c1, c2, c3 = a0 + p0, a1 + p1, a2 + p2, a3 + p3, c0 + q0, c1 + q1, c2 + q2, c3 + q3
    f = t * VECTOR
    s_g[lane, f], s_g[lane, f + 1], s_g[lane, f + 2], s_g[lane, f + 3] = a0, a1, a2, a3
    s_b[lane, f], s_b[lane, f + 1], s_b[lane, f + 2], s_b[lane, f + 3] = c0, c1, c2, c3
    cuda.syncthreads()
    stride = SUM_LANES // 2
    while stride > 0:                                     # the same order every run: no atomics
        if lane < stride:
            for q in range(VECTOR):
                s_g[lane, f + q] += s_g[lane + stride, f + q]
                s_b[lane, f + q] += s_b[lane + stride, f + q]
        cuda.syncthreads()
        stride //= 2
    if lane == 0 and j < d:
        store4(dgamma, j, s_g[0, f], s_g[0, f + 1], s_g[0, f + 2], s_g[0, f + 3])
        store4(dbeta, j, s_b[0, f], s_b[0, f + 1], s_b[0, f + 2], s_b[0, f + 3])


# ---- launchers: device arrays in, launched -------------------------------------------------

def threads(d: int) -> int:
    """A block's threads: D / 4 of them, in whole warps."""
    return WARP * math.ceil(d / VECTOR / WARP)


def backward_blocks(n_rows: int) -> int:
    """G: one block a row up to BLOCKS."""
    return max(1, min(n_rows, BLOCKS))


def _check(d: int, *arrays) -> None:
    if d % VECTOR or d > VECTOR * MAX_THREADS or not aligned(*arrays):
        raise ValueError(f"LayerNorm version 2 holds 4 features a thread: D must be a multiple of 4, at most "
                         f"{VECTOR * MAX_THREADS}, and the arrays 16-byte aligned (D = {d}); version 1 takes any D")


def _flat(a):
    return a.reshape(a.size)


def forward_device(d_x, d_gamma, d_beta, eps, d_y, d_mean, d_rstd):
    """The forward: d_y (N, D), d_mean and d_rstd (N,); G blocks stride over the rows."""
    (n, d), dtype = d_x.shape, np.dtype(d_x.dtype)
    _check(d, d_x, d_y, d_gamma, d_beta)
    layernorm_forward_kernel[max(1, min(n, MAX_GRID[0])), threads(d)](
        _flat(d_x), d_gamma, d_beta, dtype.type(eps), u64(n), u64(d), _flat(d_y), d_mean, d_rstd)


def backward_device(d_dy, d_x, d_gamma, d_mean, d_rstd, d_dx, d_partials, d_dgamma, d_dbeta):
    """The backward and the per-feature sums: d_dx (N, D), d_dgamma, d_dbeta (D,), through
    d_partials (2, G, D): G = d_partials.shape[1] blocks."""
    n, d = d_x.shape
    _check(d, d_dy, d_x, d_dx, d_partials, d_gamma, d_dgamma, d_dbeta)
    g = d_partials.shape[1]
    layernorm_backward_kernel[g, threads(d)](
        _flat(d_dy), _flat(d_x), d_gamma, d_mean, d_rstd, u64(n), u64(d), _flat(d_dx), _flat(d_partials))
    param_sum_kernel[max(1, math.ceil(d / SUM_TILE)), (WARP, SUM_LANES)](
        _flat(d_partials), u64(g), u64(d), d_dgamma, d_dbeta)


# ---- host functions: numpy in, numpy out (version 1's contract) ------------------------------

def layernorm_forward(x, gamma, beta, eps):
    """(y, mean, rstd) as the solution's, in x's dtype."""
    x = np.ascontiguousarray(x)
    (n, d), dtype = x.shape, x.dtype
    y, mean, rstd = cuda.device_array((n, d), dtype), cuda.device_array(n, dtype), cuda.device_array(n, dtype)
    forward_device(cuda.to_device(x), cuda.to_device(np.ascontiguousarray(gamma, dtype)),
                   cuda.to_device(np.ascontiguousarray(beta, dtype)), eps, y, mean, rstd)
    return y.copy_to_host(), mean.copy_to_host(), rstd.copy_to_host()


def layernorm_backward(dy, x, gamma, mean, rstd, blocks=None):
    """(dx, dgamma, dbeta) as the solution's, in x's dtype; ``blocks`` is G."""
    x = np.ascontiguousarray(x)
    (n, d), dtype = x.shape, x.dtype
    g = blocks or backward_blocks(n)
    dx, partials = cuda.device_array((n, d), dtype), cuda.device_array((2, g, d), dtype)
    dgamma, dbeta = cuda.device_array(d, dtype), cuda.device_array(d, dtype)
    arrays = [cuda.to_device(np.ascontiguousarray(a, dtype)) for a in (dy, x, gamma, mean, rstd)]
    backward_device(*arrays, dx, partials, dgamma, dbeta)
    return dx.copy_to_host(), dgamma.copy_to_host(), dbeta.copy_to_host()
