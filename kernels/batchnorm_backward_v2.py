"""BatchNorm, version 2: a two-stage column reduction and 128-bit loads (issue 34).

Version 1 (kernels/batchnorm_backward.py) gives one block all N rows of 32 features: at
D = 512 that is 16 blocks of 256 threads, 4,096 threads for a GPU that holds 270,336, and
issue 34 measured it at 1-2% of copy bandwidth. Here the rows are split too, and every pass
is wide:

  stage 1  ``*_partials_kernel``: grid (D / 32 feature tiles, P row parts), block (8, 32).
           Thread (t, l) owns features 4t .. 4t + 3 of its tile and walks rows l, l + 32, ...
           of its part, reading 4 features in one 128-bit load; a warp reads 4 whole rows
           of 128 bytes. A shared-memory tree merges the 32 lanes; one row of partials per
           part. At D = 512, P = 128: half a million threads.
  stage 2  ``*_finish_kernel``: one block per feature tile merges its P partials the same
           way and writes the per-feature results, and the coefficients of stage 3.
  stage 3  an elementwise pass with per-feature coefficients held in registers:
           y = x * scale + shift (forward, both modes), dx = a * dy + b * x + c (backward).
           Block (32, 8): 32 feature groups by 8 rows; each thread loads its coefficients
           once and strides over rows: per element one 128-bit load of each input and one
           128-bit store, nothing else.

The forward's partials are Welford triples (count, mean, M2), merged with Chan's formula
(``welford_merge``, as version 1): no E[x^2] - E[x]^2 cancellation. The backward's are the
sums of dy and dy * (x - mean). dx = gamma * rstd / N * (N dy - dbeta - x-hat dgamma) is
affine in dy and x per feature, so stage 2 folds it into (a, b, c). No atomics: the same
bits every run. Traffic per op: forward 3 N*D (x twice, y once), backward 5 N*D (dy and x
twice, dx once), as PyTorch's native kernels.

What the static table predicts (benchmarks/results/kernels_static.md): 128-bit loads, no
64-bit division (flat arrays, unsigned offsets), and every pass wide enough to fill a GPU.
Version 2 reads 4 features at once: D must be a multiple of 4 and the arrays 16-byte
aligned (the launchers check; version 1 takes any D).

Shapes: N rows, D features, P parts of R rows (``parts``). Flat arrays: x, y, dy, dx (N*D,);
gamma, beta, running_*, mean, rstd, dgamma, dbeta (D,); partials (3, P, D) flattened, coef
(3, D) flattened. Math in x's dtype. Tests: tests/kernels/test_batchnorm_backward_kernels.py.
"""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.layernorm_backward import welford_merge
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import VECTOR, aligned, load4, store4, u64

GROUPS, LANES = 8, 32              # stages 1 and 2: block (GROUPS, LANES), GROUPS * 4 features
TILE = GROUPS * VECTOR             # features per block: 32
ROWS = 8                           # stage 3: block (32, ROWS)
TARGET_THREADS = 1 << 19           # stage 1's threads: enough to fill a GPU twice over
ROWS_PER_THREAD = 4                # stage 3: rows each thread strides over


# ---- device helpers: Welford over 4 features, and the merge of a block's 32 lanes ---------

@cuda.jit(device=True)
def welford_step(mean, m2, v, count):
    """One value into a running (mean, M2); count already includes it."""
    delta = v - mean
    mean += delta / count
    return mean, m2 + delta * (v - mean)


@cuda.jit(device=True)
def merge_lanes(s_count, s_mean, s_m2, t, lane):
    """Chan-merge the 32 lanes' triples of shared (LANES, TILE) arrays into lane 0's row.
    Thread (t, lane) merges columns 4t .. 4t + 3; every thread must call it."""
    stride = LANES // 2
    while stride > 0:
        if lane < stride:
            for q in range(VECTOR):
                f = t * VECTOR + q
                c, m, m2 = welford_merge(s_count[lane, f], s_mean[lane, f], s_m2[lane, f],
                                         s_count[lane + stride, f], s_mean[lane + stride, f], s_m2[lane + stride, f])
                s_count[lane, f], s_mean[lane, f], s_m2[lane, f] = c, m, m2
        cuda.syncthreads()
        stride //= 2


@cuda.jit(device=True)
def add_lanes(s_a, s_b, t, lane):
    """Sum the 32 lanes of two shared (LANES, TILE) arrays into lane 0's row, as merge_lanes."""
    stride = LANES // 2
    while stride > 0:
        if lane < stride:
            for q in range(VECTOR):
                f = t * VECTOR + q
                s_a[lane, f] += s_a[lane + stride, f]
                s_b[lane, f] += s_b[lane + stride, f]
        cuda.syncthreads()
        stride //= 2


# ---- 1. the training forward: stage 1, stage 2; the evaluation forward's coefficients -----

@cuda.jit
def stats_partials_kernel(x, n, d, rows_per_part, partials):
    # x: N*D; n, d, rows_per_part: u64; partials: 3*P*D (count, mean, M2 of part p's rows)
    t, lane = cuda.threadIdx.x, cuda.threadIdx.y
    j = u64(cuda.blockIdx.x * TILE + t * VECTOR)                  # this thread's first feature
    p = u64(cuda.blockIdx.y)
    first = p * rows_per_part
    stop = min(first + rows_per_part, n)
    zero, one = x.dtype.type(0), x.dtype.type(1)
    count, m0, m1, m2_, m3, q0, q1, q2, q3 = zero, zero, zero, zero, zero, zero, zero, zero, zero
    if j < d:
        for i in range(first + u64(lane), stop, u64(LANES)):     # rows lane, lane + 32, ... of part p
            v0, v1, v2, v3 = load4(x, i * d + j)                  # x[i, j:j + 4], one 128-bit load
            count += one
            m0, q0 = welford_step(m0, q0, v0, count)
            m1, q1 = welford_step(m1, q1, v1, count)
            m2_, q2 = welford_step(m2_, q2, v2, count)
            m3, q3 = welford_step(m3, q3, v3, count)
    s_count = cuda.shared.array((LANES, TILE), x.dtype)
    s_mean = cuda.shared.array((LANES, TILE), x.dtype)
    s_m2 = cuda.shared.array((LANES, TILE), x.dtype)
    f = t * VECTOR
    s_count[lane, f], s_count[lane, f + 1], s_count[lane, f + 2], s_count[lane, f + 3] = count, count, count, count
    s_mean[lane, f], s_mean[lane, f + 1], s_mean[lane, f + 2], s_mean[lane, f + 3] = m0, m1, m2_, m3
    s_m2[lane, f], s_m2[lane, f + 1], s_m2[lane, f + 2], s_m2[lane, f + 3] = q0, q1, q2, q3
    cuda.syncthreads()
    merge_lanes(s_count, s_mean, s_m2, t, lane)
    if lane == 0 and j < d:
        parts = u64(cuda.gridDim.y)
        store4(partials, p * d + j, s_count[0, f], s_count[0, f + 1], s_count[0, f + 2], s_count[0, f + 3])
        store4(partials, (parts + p) * d + j, s_mean[0, f], s_mean[0, f + 1], s_mean[0, f + 2], s_mean[0, f + 3])
        store4(partials, (u64(2) * parts + p) * d + j, s_m2[0, f], s_m2[0, f + 1], s_m2[0, f + 2], s_m2[0, f + 3])


@cuda.jit
def stats_finish_kernel(partials, parts, n, d, gamma, beta, running_mean, running_var, momentum, eps,
                        mean, rstd, new_mean, new_var, coef):
    # partials: 3*P*D; parts (P), n, d: u64; gamma, beta, running_*: D; momentum, eps: x's dtype;
    # mean, rstd, new_mean, new_var: D (written); coef: 3*D (written: scale, shift for stage 3)
    t, lane = cuda.threadIdx.x, cuda.threadIdx.y
    j = u64(cuda.blockIdx.x * TILE + t * VECTOR)
    zero, one = gamma.dtype.type(0), gamma.dtype.type(1)
    s_count = cuda.shared.array((LANES, TILE), gamma.dtype)
    s_mean = cuda.shared.array((LANES, TILE), gamma.dtype)
    s_m2 = cuda.shared.array((LANES, TILE), gamma.dtype)
    f = t * VECTOR
    for q in range(VECTOR):
        s_count[lane, f + q], s_mean[lane, f + q], s_m2[lane, f + q] = zero, zero, zero
    if j < d:
        for p in range(u64(lane), parts, u64(LANES)):             # parts lane, lane + 32, ...
            c = load4(partials, p * d + j)
            m = load4(partials, (parts + p) * d + j)
            s = load4(partials, (u64(2) * parts + p) * d + j)
            for q in range(VECTOR):
                s_count[lane, f + q], s_mean[lane, f + q], s_m2[lane, f + q] = welford_merge(
                    s_count[lane, f + q], s_mean[lane, f + q], s_m2[lane, f + q], c[q], m[q], s[q])
    cuda.syncthreads()
    merge_lanes(s_count, s_mean, s_m2, t, lane)
    if lane == 0 and j < d:
        nf = gamma.dtype.type(n)
        for q in range(VECTOR):
            jq = j + u64(q)
            mu, ss = s_mean[0, f + q], s_m2[0, f + q]
            r = one / math.sqrt(ss / nf + eps)                    # the biased variance normalises
            mean[jq], rstd[jq] = mu, r
            new_mean[jq] = (one - momentum) * running_mean[jq] + momentum * mu
            new_var[jq] = (one - momentum) * running_var[jq] + momentum * (ss / (nf - one))  # unbiased
            coef[jq] = r * gamma[jq]                              # y = x * scale + shift
            coef[d + jq] = beta[jq] - mu * r * gamma[jq]


@cuda.jit
def eval_coef_kernel(gamma, beta, running_mean, running_var, eps, d, mean, rstd, coef):
    # gamma, beta, running_*: D; eps: x's dtype; d: u64; mean, rstd: D, coef: 3*D (written)
    j = u64(cuda.grid(1))
    if j < d:
        r = gamma.dtype.type(1) / math.sqrt(running_var[j] + eps)
        mean[j], rstd[j] = running_mean[j], r
        coef[j] = r * gamma[j]
        coef[d + j] = beta[j] - running_mean[j] * r * gamma[j]


# ---- stage 3 of the forward, both modes --------------------------------------------------

@cuda.jit
def normalize_kernel(x, coef, n, d, y):
    # x: N*D; coef: 3*D (scale, shift); n, d: u64; y: N*D (written). Thread (g, r): features
    # 4g .. 4g + 3, rows r, r + 8 * gridDim.y, ...
    j = u64(cuda.grid(2)[0]) * u64(VECTOR)
    if j >= d:
        return
    a0, a1, a2, a3 = load4(coef, j)                               # scale: loaded once, kept in registers
    b0, b1, b2, b3 = load4(coef, d + j)                           # shift
    i, stride = u64(cuda.grid(2)[1]), u64(cuda.gridsize(2)[1])
    while i < n:                                                  # not range(): it divides to count its steps
        at = i * d + j
        v0, v1, v2, v3 = load4(x, at)
        store4(y, at, v0 * a0 + b0, v1 * a1 + b1, v2 * a2 + b2, v3 * a3 + b3)
        i += stride


# ---- 2. the training backward: stage 1, stage 2, stage 3 ------------------------------------

@cuda.jit
def grad_partials_kernel(dy, x, mean, n, d, rows_per_part, partials):
    # dy, x: N*D; mean: D; n, d, rows_per_part: u64; partials: 2*P*D (sums of dy, dy * (x - mean))
    t, lane = cuda.threadIdx.x, cuda.threadIdx.y
    j = u64(cuda.blockIdx.x * TILE + t * VECTOR)
    p = u64(cuda.blockIdx.y)
    first = p * rows_per_part
    stop = min(first + rows_per_part, n)
    zero = x.dtype.type(0)
    g0, g1, g2, g3, h0, h1, h2, h3 = zero, zero, zero, zero, zero, zero, zero, zero
    if j < d:
        mu0, mu1, mu2, mu3 = load4(mean, j)
        for i in range(first + u64(lane), stop, u64(LANES)):
            at = i * d + j
            e0, e1, e2, e3 = load4(dy, at)
            v0, v1, v2, v3 = load4(x, at)
            g0, g1, g2, g3 = g0 + e0, g1 + e1, g2 + e2, g3 + e3
            h0, h1, h2, h3 = h0 + e0 * (v0 - mu0), h1 + e1 * (v1 - mu1), h2 + e2 * (v2 - mu2), h3 + e3 * (v3 - mu3)
    s_g = cuda.shared.array((LANES, TILE), x.dtype)
    s_h = cuda.shared.array((LANES, TILE), x.dtype)
    f = t * VECTOR
    s_g[lane, f], s_g[lane, f + 1], s_g[lane, f + 2], s_g[lane, f + 3] = g0, g1, g2, g3
    s_h[lane, f], s_h[lane, f + 1], s_h[lane, f + 2], s_h[lane, f + 3] = h0, h1, h2, h3
    cuda.syncthreads()
    add_lanes(s_g, s_h, t, lane)
    if lane == 0 and j < d:
        parts = u64(cuda.gridDim.y)
        store4(partials, p * d + j, s_g[0, f], s_g[0, f + 1], s_g[0, f + 2], s_g[0, f + 3])
        store4(partials, (parts + p) * d + j, s_h[0, f], s_h[0, f + 1], s_h[0, f + 2], s_h[0, f + 3])


@cuda.jit
def grad_finish_kernel(partials, parts, n, d, gamma, mean, rstd, dgamma, dbeta, coef):
    # partials: 2*P*D; parts, n, d: u64; gamma, mean, rstd: D; dgamma, dbeta: D (written);
    # coef: 3*D (written: a, b, c of dx = a * dy + b * x + c)
    t, lane = cuda.threadIdx.x, cuda.threadIdx.y
    j = u64(cuda.blockIdx.x * TILE + t * VECTOR)
    zero = gamma.dtype.type(0)
    s_g = cuda.shared.array((LANES, TILE), gamma.dtype)
    s_h = cuda.shared.array((LANES, TILE), gamma.dtype)
    f = t * VECTOR
    g0, g1, g2, g3, h0, h1, h2, h3 = zero, zero, zero, zero, zero, zero, zero, zero
    if j < d:
        for p in range(u64(lane), parts, u64(LANES)):
            e0, e1, e2, e3 = load4(partials, p * d + j)
            v0, v1, v2, v3 = load4(partials, (parts + p) * d + j)
            g0, g1, g2, g3, h0, h1, h2, h3 = g0 + e0, g1 + e1, g2 + e2, g3 + e3, h0 + v0, h1 + v1, h2 + v2, h3 + v3
    s_g[lane, f], s_g[lane, f + 1], s_g[lane, f + 2], s_g[lane, f + 3] = g0, g1, g2, g3
    s_h[lane, f], s_h[lane, f + 1], s_h[lane, f + 2], s_h[lane, f + 3] = h0, h1, h2, h3
    cuda.syncthreads()
    add_lanes(s_g, s_h, t, lane)
    if lane == 0 and j < d:
        nf = gamma.dtype.type(n)
        for q in range(VECTOR):
            jq = j + u64(q)
            r = rstd[jq]
            db, dg = s_g[0, f + q], s_h[0, f + q] * r             # dbeta, dgamma
            dbeta[jq], dgamma[jq] = db, dg
            k = gamma[jq] * r / nf
            b = -k * r * dg
            coef[jq], coef[d + jq], coef[u64(2) * d + jq] = k * nf, b, -k * db - b * mean[jq]


@cuda.jit
def grad_input_kernel(dy, x, coef, n, d, dx):
    # dy, x: N*D; coef: 3*D (a, b, c); n, d: u64; dx: N*D (written), as normalize_kernel
    j = u64(cuda.grid(2)[0]) * u64(VECTOR)
    if j >= d:
        return
    a0, a1, a2, a3 = load4(coef, j)
    b0, b1, b2, b3 = load4(coef, d + j)
    c0, c1, c2, c3 = load4(coef, u64(2) * d + j)
    i, stride = u64(cuda.grid(2)[1]), u64(cuda.gridsize(2)[1])
    while i < n:
        at = i * d + j
        e0, e1, e2, e3 = load4(dy, at)
        v0, v1, v2, v3 = load4(x, at)
        store4(dx, at, a0 * e0 + b0 * v0 + c0, a1 * e1 + b1 * v1 + c1, a2 * e2 + b2 * v2 + c2,
               a3 * e3 + b3 * v3 + c3)
        i += stride


# ---- launchers: device arrays in, launched -------------------------------------------------

def parts(n: int, d: int) -> int:
    """P, stage 1's row parts: about TARGET_THREADS threads, at least 4 rows a lane, P <= 65,535."""
    per_part = GROUPS * LANES * math.ceil(d / TILE)              # threads of one part
    return max(1, min(math.ceil(TARGET_THREADS / per_part), math.ceil(n / (4 * LANES)), MAX_GRID[1]))


def scratch(n: int, d: int, dtype) -> dict:
    """The device scratch of one op at (N, D): partials (3 * P * D,) and coef (3 * D,)."""
    return {"partials": cuda.device_array(3 * parts(n, d) * d, dtype), "coef": cuda.device_array(3 * d, dtype)}


def _flat(a):
    return a.reshape(a.size)


def _check(d: int, *arrays) -> None:
    if d % VECTOR or not aligned(*arrays):
        raise ValueError(f"BatchNorm version 2 reads {VECTOR} features at a time: D must be a multiple of "
                         f"{VECTOR} and every array 16-byte aligned (D = {d}); version 1 takes any D")


def _wide_grid(n: int, d: int) -> tuple[int, int]:
    """Stage 3's grid for block (32, ROWS): feature groups along x, rows (strided) along y."""
    return max(1, math.ceil(d / VECTOR / 32)), max(1, min(math.ceil(n / (ROWS * ROWS_PER_THREAD)), MAX_GRID[1]))


def train_forward_device(d_x, d_gamma, d_beta, d_running_mean, d_running_var, momentum, eps,
                         d_y, d_mean, d_rstd, d_new_mean, d_new_var, d_scratch):
    """Stages 1, 2, 3: d_y (N, D) and the four (D,) statistics; d_scratch from ``scratch``."""
    (n, d), dtype = d_x.shape, np.dtype(d_x.dtype)
    partials, coef = d_scratch["partials"], d_scratch["coef"]
    _check(d, d_x, d_y, partials, coef)
    p = partials.size // (3 * d)
    tiles = math.ceil(d / TILE)
    stats_partials_kernel[(tiles, p), (GROUPS, LANES)](_flat(d_x), u64(n), u64(d), u64(math.ceil(n / p)), partials)
    stats_finish_kernel[tiles, (GROUPS, LANES)](
        partials, u64(p), u64(n), u64(d), d_gamma, d_beta, d_running_mean, d_running_var, dtype.type(momentum),
        dtype.type(eps), d_mean, d_rstd, d_new_mean, d_new_var, coef)
    normalize_kernel[_wide_grid(n, d), (32, ROWS)](_flat(d_x), coef, u64(n), u64(d), _flat(d_y))


def eval_forward_device(d_x, d_gamma, d_beta, d_running_mean, d_running_var, eps, d_y, d_mean, d_rstd, d_scratch):
    """The evaluation forward: coefficients from the running statistics, then stage 3."""
    (n, d), dtype = d_x.shape, np.dtype(d_x.dtype)
    coef = d_scratch["coef"]
    _check(d, d_x, d_y, coef)
    eval_coef_kernel[max(1, math.ceil(d / 128)), 128](
        d_gamma, d_beta, d_running_mean, d_running_var, dtype.type(eps), u64(d), d_mean, d_rstd, coef)
    normalize_kernel[_wide_grid(n, d), (32, ROWS)](_flat(d_x), coef, u64(n), u64(d), _flat(d_y))


def train_backward_device(d_dy, d_x, d_gamma, d_mean, d_rstd, d_dx, d_dgamma, d_dbeta, d_scratch):
    """Stages 1, 2, 3 of the backward: d_dx (N, D), d_dgamma and d_dbeta (D,)."""
    n, d = d_x.shape
    partials, coef = d_scratch["partials"], d_scratch["coef"]
    _check(d, d_dy, d_x, d_dx, partials, coef, d_mean)
    p = partials.size // (3 * d)                                  # the forward's scratch: 2 of its 3 rows
    tiles = math.ceil(d / TILE)
    grad_partials_kernel[(tiles, p), (GROUPS, LANES)](
        _flat(d_dy), _flat(d_x), d_mean, u64(n), u64(d), u64(math.ceil(n / p)), partials)
    grad_finish_kernel[tiles, (GROUPS, LANES)](
        partials, u64(p), u64(n), u64(d), d_gamma, d_mean, d_rstd, d_dgamma, d_dbeta, coef)
    grad_input_kernel[_wide_grid(n, d), (32, ROWS)](_flat(d_dy), _flat(d_x), coef, u64(n), u64(d), _flat(d_dx))


# ---- host functions: numpy in, numpy out (as version 1's, for D a multiple of 4) -------------

def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    """(y, mean, rstd, new_running_mean, new_running_var) as the solution's, in x's dtype."""
    x = np.ascontiguousarray(x)                                   # N, D
    dtype, (n, d) = x.dtype, x.shape
    if training and n < 2:
        raise ValueError("BatchNorm in training needs more than one example per feature")
    vectors = [cuda.to_device(np.ascontiguousarray(a, dtype=dtype)) for a in (gamma, beta, running_mean, running_var)]
    y, (mean, rstd, new_mean, new_var) = cuda.device_array((n, d), dtype), (cuda.device_array(d, dtype) for _ in range(4))
    work = scratch(n, d, dtype)
    if not training:
        eval_forward_device(cuda.to_device(x), *vectors, eps, y, mean, rstd, work)
        return y.copy_to_host(), mean.copy_to_host(), rstd.copy_to_host(), running_mean.copy(), running_var.copy()
    train_forward_device(cuda.to_device(x), *vectors, momentum, eps, y, mean, rstd, new_mean, new_var, work)
    return tuple(a.copy_to_host() for a in (y, mean, rstd, new_mean, new_var))


def batchnorm_backward(dy, x, gamma, mean, rstd):
    """(dx, dgamma, dbeta) as the solution's, in x's dtype."""
    x = np.ascontiguousarray(x)                                   # N, D
    dtype, (n, d) = x.dtype, x.shape
    vectors = [cuda.to_device(np.ascontiguousarray(a, dtype=dtype)) for a in (gamma, mean, rstd)]
    dx, dgamma, dbeta = cuda.device_array((n, d), dtype), cuda.device_array(d, dtype), cuda.device_array(d, dtype)
    train_backward_device(cuda.to_device(np.ascontiguousarray(dy, dtype=dtype)), cuda.to_device(x), *vectors,
                          dx, dgamma, dbeta, scratch(n, d, dtype))
    return dx.copy_to_host(), dgamma.copy_to_host(), dbeta.copy_to_host()
