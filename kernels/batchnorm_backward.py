"""BatchNorm over the batch axis, Numba CUDA: the fused training forward, the evaluation
forward, and the fused training backward.

LayerNorm's kernels (kernels/layernorm_backward.py) reduce along a row; BatchNorm reduces
down a column, one (mean, rstd) per feature over the N examples. Reading a column with one
thread would stride D elements between loads, so a block covers F neighbouring features
and L row lanes: thread (f, l) walks rows l, l + L, ... of feature f, and the F threads of a
warp read F consecutive addresses of the same row (coalesced). A shared-memory tree then
merges the L lanes of each feature.

1. ``train_forward_kernel``: each thread runs Welford's update, a running (count, mean, M2),
   over its rows; the tree merges the lanes with Chan's formula (``welford_merge``, shared
   with LayerNorm's kernel). Lane 0 writes mean, rstd = 1 / sqrt(M2 / N + eps) (the biased
   variance normalises) and the new running averages, the variance one from M2 / (N - 1)
   (unbiased). Then every lane writes y for its rows.
2. ``eval_forward_kernel``: one thread per element, normalising with the running statistics
   (constants: no reduction at all); row 0's threads write mean and rstd.
3. ``train_backward_kernel``: the same layout. Pass 1 sums dy and dy * x-hat per feature,
   which are dbeta and dgamma themselves; one tree merges both. Pass 2 writes
   dx = gamma * rstd / N * (N dy - dbeta - x-hat dgamma). No atomics: the same bits every run.

Memory traffic per op (each array once): the training forward reads x (N*D) and writes y
(N*D) plus 4 D statistics; the backward reads dy and x and writes dx (3 N*D). Pass 2 re-reads
what pass 1 read: for the batches of a conv layer (N = B*H*W in the hundreds of thousands)
that misses the cache, and a block holds all N rows of its F features, so D / F blocks
(32 for D = 1024) cannot fill a large GPU: issue 34 measured these kernels at 1-2% of copy
bandwidth. Version 2 (kernels/batchnorm_backward_v2.py) splits the rows over blocks too and
merges their partial triples in a second stage: this file keeps the simple layout that
teaches the column reduction.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_batchnorm_backward_kernels.py
Check and time it: python -m backprop_traps.kernels.batchnorm_backward (from any folder) runs these kernels on
the benchmark's tiny cases (kernels/cases/batchnorm_backward.py) in float64 and float32 against the
solution notebook, the CPU reference, and times them (kernels/runtime/self_check.py; the simulator
without a GPU).

Shapes: N examples, D features, F features per block, L row lanes per block (a power of two).
x, y, dy, dx (N, D); gamma, beta, running_mean, running_var, mean, rstd, dgamma, dbeta (D,).
Math runs in x's dtype (float32 or float64).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.batchnorm_backward: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import functools
import math

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda

from backprop_traps.kernels.layernorm_backward import welford_merge

FEATURES_PER_BLOCK = 32  # F: one warp's worth of neighbouring features
ROW_LANES = 8            # L: threads sharing one feature's rows
EVAL_THREADS = 256


def _check_lanes(lanes: int) -> None:
    if lanes < 1 or lanes & (lanes - 1):
        raise ValueError(f"row_lanes must be a power of two, got {lanes}")


# 1. the fused training forward -------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def train_forward_kernel(features: int, lanes: int, dtype: np.dtype):
    """Compiled per (F, L, dtype): shared arrays need their shape and type at compile time."""
    _check_lanes(lanes)
    shared_type = numba.from_dtype(dtype)  # also a cast: N as a float of this dtype
    zero, one = dtype.type(0), dtype.type(1)

    @cuda.jit
    def train_forward(x, gamma, beta, running_mean, running_var, momentum, eps,
                      y, mean, rstd, new_mean, new_var):
        # x: N, D; gamma, beta, running_*: D; momentum, eps: scalars in x's dtype;
        # y: N, D; mean, rstd, new_mean, new_var: D (written)
        f, lane = cuda.threadIdx.x, cuda.threadIdx.y
        j = cuda.blockIdx.x * features + f
        n, d = x.shape
        count, m, m2 = zero, zero, zero  # Welford over rows lane, lane + L, ...
        if j < d:
            for i in range(lane, n, lanes):
                v = x[i, j]
                count += one
                delta = v - m
                m += delta / count
                m2 += delta * (v - m)
        s_count = cuda.shared.array((lanes, features), shared_type)
        s_mean = cuda.shared.array((lanes, features), shared_type)
        s_m2 = cuda.shared.array((lanes, features), shared_type)
        s_count[lane, f], s_mean[lane, f], s_m2[lane, f] = count, m, m2
        cuda.syncthreads()
        stride = lanes // 2
        while stride > 0:  # every thread reaches every barrier, j < D or not
            if lane < stride:
                c, mm, q = welford_merge(s_count[lane, f], s_mean[lane, f], s_m2[lane, f],
                                         s_count[lane + stride, f], s_mean[lane + stride, f],
                                         s_m2[lane + stride, f])
                s_count[lane, f], s_mean[lane, f], s_m2[lane, f] = c, mm, q
            cuda.syncthreads()
            stride //= 2
        if j < d:
            mu, ss = s_mean[0, f], s_m2[0, f]
            r = one / math.sqrt(ss / shared_type(n) + eps)  # the biased variance normalises the batch
            if lane == 0:
                mean[j], rstd[j] = mu, r
                new_mean[j] = (one - momentum) * running_mean[j] + momentum * mu
                new_var[j] = (one - momentum) * running_var[j] + momentum * (ss / shared_type(n - 1))  # unbiased
            for i in range(lane, n, lanes):
                y[i, j] = (x[i, j] - mu) * r * gamma[j] + beta[j]

    return train_forward


# 2. the evaluation forward -------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def eval_forward_kernel(dtype: np.dtype):
    one = dtype.type(1)

    @cuda.jit
    def eval_forward(x, gamma, beta, running_mean, running_var, eps, y, mean, rstd):
        # one thread per element of x (N, D), flat index k = i * D + j
        k = cuda.grid(1)
        n, d = x.shape
        if k < n * d:
            i, j = k // d, k % d
            r = one / math.sqrt(running_var[j] + eps)
            y[i, j] = (x[i, j] - running_mean[j]) * r * gamma[j] + beta[j]
            if i == 0:
                mean[j], rstd[j] = running_mean[j], r

    return eval_forward


# 3. the fused training backward ----------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def train_backward_kernel(features: int, lanes: int, dtype: np.dtype):
    """Compiled per (F, L, dtype), as the forward."""
    _check_lanes(lanes)
    shared_type = numba.from_dtype(dtype)
    zero = dtype.type(0)

    @cuda.jit
    def train_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta):
        # dy, x: N, D; gamma, mean, rstd: D; dx: N, D, dgamma, dbeta: D (written)
        f, lane = cuda.threadIdx.x, cuda.threadIdx.y
        j = cuda.blockIdx.x * features + f
        n, d = x.shape
        sum_dy, sum_dyx = zero, zero  # pass 1: dbeta's and dgamma's shares of this lane
        if j < d:
            mu, r = mean[j], rstd[j]
            for i in range(lane, n, lanes):
                g = dy[i, j]
                sum_dy += g
                sum_dyx += g * (x[i, j] - mu) * r
        s_dy = cuda.shared.array((lanes, features), shared_type)
        s_dyx = cuda.shared.array((lanes, features), shared_type)
        s_dy[lane, f], s_dyx[lane, f] = sum_dy, sum_dyx
        cuda.syncthreads()
        stride = lanes // 2
        while stride > 0:
            if lane < stride:
                s_dy[lane, f] += s_dy[lane + stride, f]
                s_dyx[lane, f] += s_dyx[lane + stride, f]
            cuda.syncthreads()
            stride //= 2
        if j < d:
            db, dg = s_dy[0, f], s_dyx[0, f]
            if lane == 0:
                dbeta[j], dgamma[j] = db, dg
            nf = shared_type(n)  # N in the launch's dtype: no float64 in a float32 launch
            scale = gamma[j] * rstd[j] / nf
            for i in range(lane, n, lanes):  # pass 2: the mean's and the variance's paths
                xhat = (x[i, j] - mean[j]) * rstd[j]
                dx[i, j] = scale * (nf * dy[i, j] - db - xhat * dg)

    return train_backward


# launchers: device arrays in, launched --------------------------------------------------------
def _blocks(n_features: int, features: int) -> int:
    return max(1, math.ceil(n_features / features))  # grid x: D / F blocks, far below 2**31 - 1


def train_forward_device(d_x, d_gamma, d_beta, d_running_mean, d_running_var, momentum, eps,
                         d_y, d_mean, d_rstd, d_new_mean, d_new_var,
                         features_per_block=FEATURES_PER_BLOCK, row_lanes=ROW_LANES):
    """Kernel 1: d_y (N, D) and the five (D,) statistics, one block per F features."""
    dtype, d = np.dtype(d_x.dtype), d_x.shape[1]
    train_forward_kernel(features_per_block, row_lanes, dtype)[
        _blocks(d, features_per_block), (features_per_block, row_lanes)](
        d_x, d_gamma, d_beta, d_running_mean, d_running_var, dtype.type(momentum), dtype.type(eps),
        d_y, d_mean, d_rstd, d_new_mean, d_new_var)


def eval_forward_device(d_x, d_gamma, d_beta, d_running_mean, d_running_var, eps, d_y, d_mean, d_rstd):
    """Kernel 2: d_y (N, D) from the running statistics, one thread per element."""
    dtype, (n, d) = np.dtype(d_x.dtype), d_x.shape
    eval_forward_kernel(dtype)[max(1, math.ceil(n * d / EVAL_THREADS)), EVAL_THREADS](
        d_x, d_gamma, d_beta, d_running_mean, d_running_var, dtype.type(eps), d_y, d_mean, d_rstd)


def train_backward_device(d_dy, d_x, d_gamma, d_mean, d_rstd, d_dx, d_dgamma, d_dbeta,
                          features_per_block=FEATURES_PER_BLOCK, row_lanes=ROW_LANES):
    """Kernel 3: d_dx (N, D), d_dgamma and d_dbeta (D,), one block per F features."""
    dtype, d = np.dtype(d_x.dtype), d_x.shape[1]
    train_backward_kernel(features_per_block, row_lanes, dtype)[
        _blocks(d, features_per_block), (features_per_block, row_lanes)](
        d_dy, d_x, d_gamma, d_mean, d_rstd, d_dx, d_dgamma, d_dbeta)


# host functions: numpy in, numpy out ----------------------------------------------------------
def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps,
                      features_per_block=FEATURES_PER_BLOCK, row_lanes=ROW_LANES):
    """(y, mean, rstd, new_running_mean, new_running_var) as the solution's
    ``batchnorm_forward``, in x's dtype."""
    x = np.ascontiguousarray(x)  # N, D
    dtype, (n, d) = x.dtype, x.shape
    if training and n < 2:
        raise ValueError("BatchNorm in training needs more than one example per feature")
    gamma, beta, running_mean, running_var = (
        np.ascontiguousarray(a, dtype=dtype) for a in (gamma, beta, running_mean, running_var))  # D
    y = cuda.device_array((n, d), dtype=dtype)
    mean, rstd = cuda.device_array(d, dtype=dtype), cuda.device_array(d, dtype=dtype)
    d_x, d_gamma, d_beta = cuda.to_device(x), cuda.to_device(gamma), cuda.to_device(beta)
    d_rm, d_rv = cuda.to_device(running_mean), cuda.to_device(running_var)
    if not training:
        if n:
            eval_forward_device(d_x, d_gamma, d_beta, d_rm, d_rv, eps, y, mean, rstd)
        return y.copy_to_host(), running_mean.copy(), rstd.copy_to_host(), running_mean.copy(), running_var.copy()
    new_mean, new_var = cuda.device_array(d, dtype=dtype), cuda.device_array(d, dtype=dtype)
    train_forward_device(d_x, d_gamma, d_beta, d_rm, d_rv, momentum, eps, y, mean, rstd, new_mean, new_var,
                         features_per_block, row_lanes)
    return (y.copy_to_host(), mean.copy_to_host(), rstd.copy_to_host(), new_mean.copy_to_host(),
            new_var.copy_to_host())


def batchnorm_backward(dy, x, gamma, mean, rstd, features_per_block=FEATURES_PER_BLOCK,
                       row_lanes=ROW_LANES):
    """(dx, dgamma, dbeta) as the solution's ``batchnorm_backward``, in x's dtype."""
    x = np.ascontiguousarray(x)  # N, D
    dtype, (n, d) = x.dtype, x.shape
    dy = np.ascontiguousarray(dy, dtype=dtype)  # N, D
    gamma, mean, rstd = (np.ascontiguousarray(a, dtype=dtype) for a in (gamma, mean, rstd))  # D
    dx = cuda.device_array((n, d), dtype=dtype)
    dgamma, dbeta = cuda.device_array(d, dtype=dtype), cuda.device_array(d, dtype=dtype)
    train_backward_device(cuda.to_device(dy), cuda.to_device(x), cuda.to_device(gamma), cuda.to_device(mean),
                          cuda.to_device(rstd), dx, dgamma, dbeta, features_per_block, row_lanes)
    return dx.copy_to_host(), dgamma.copy_to_host(), dbeta.copy_to_host()


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("batchnorm_backward"))
