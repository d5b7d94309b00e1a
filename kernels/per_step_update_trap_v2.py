"""A strided, zero-padded 1-D convolution, forward and backward, version 2: tiled (issue 34).

Version 1 (kernels/per_step_update_trap.py) is the one to read first: one thread per output
element, the filter gradient a two-stage tree reduction with no atomics (why: its header).
This version keeps that plan (stage 1 partial sums, stage 2 ``sum_partials_kernel`` and
``block_tree_sum``, both version 1's) and changes how the sums are computed.

What changed (issue 34 measured version 1 at 0-1% of copy bandwidth, 0.04x cuDNN): a
convolution is a matrix product per example, out_n = W X_n with X_n the (C_in * K, L_out)
window matrix. A block computes a 32-channel by 128-position tile
of its output: it copies the inputs the tile needs into shared memory (a few channels at a
time, every global element read once per block, neighbouring threads on neighbouring
addresses), and each thread keeps a 4 x 4 tile of outputs in registers, so every value it
takes from shared memory feeds 4 multiply-adds. The input gradient is the same product
with W transposed (a gather: tap k of window t read input t * S + k - P), and the filter
gradient a product of dout with X_n transposed, reduced over positions: a 32 x 32 x K tile
per block, its positions in parts (stage 1). The static table (benchmarks/results/
kernels_static.md) shows no local memory and no 64-bit division: the inner loops read shared
memory only, through unsigned offsets. Kernels are made per (K, stride) (``tiled``).

The bias's stage 1 reads each row dout[n, o, :] along its contiguous axis, with no division
in its loops. Run: the launchers (``*_device``) take device arrays and only launch; the host
functions are version 1's, on these launchers. Tests (both versions): ``python -m pytest
tests/kernels/test_per_step_update_trap_kernels.py -q``; ``python -m
backprop_traps.kernels.per_step_update_trap`` checks both on the benchmark's tiny cases
against the solution notebook and times them (kernels/runtime/self_check.py).

Shapes: N batch, C_in / C_out input / output channels, L input length, K filter taps,
S stride, P zero padding at each end, L_out = (L + 2P - K) // S + 1 output positions.
x (N, C_in, L), w (C_out, C_in, K), b (C_out,), out and dout (N, C_out, L_out).
"""

import functools
import math
import sys

import numpy as np

from backprop_traps.kernels import per_step_update_trap as v1
from backprop_traps.kernels.common.patterns import bounded_jit, i64, u64
from backprop_traps.kernels.per_step_update_trap import (THREADS_PER_BLOCK, block_tree_sum, reduction_launch,
                                                         sum_partials_kernel)
from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID

MAX_PARTIALS = 1024      # stage-1 parts per value, at most; stage 2 folds them
TX, TY, R = 32, 8, 4     # the tiled kernels' block (TX, TY); each thread R x R outputs
TILE_T, TILE_C = TX * R, TY * R  # a block's tile: 128 positions by 32 channels
SHARED_BUDGET = 40 * 1024  # bytes of shared memory a tiled block may take, in float64


# ---- 1. forward, 2. backward-data, 3. backward-weight: tiled, made per (K, S) -----------

def reduction_chunk(taps: int, stride: int) -> int:
    """Channels per shared tile: the most (a power of two, up to 16) whose tiles fit SHARED_BUDGET."""
    chunk = 16
    while chunk > 1 and 8 * chunk * (TILE_T * stride + taps - 1 + TILE_C * taps) > SHARED_BUDGET:
        chunk //= 2
    return chunk


def weight_tile(taps: int, stride: int) -> int:
    """Positions per filter-gradient tile: the most (128 down to 8) whose 32-channel tiles fit."""
    positions = TILE_T
    while positions > 8 and 8 * TILE_C * (positions + positions * stride + taps - 1) > SHARED_BUDGET:
        positions //= 2
    return positions


@functools.lru_cache(maxsize=None)
def tiled(taps: int, stride: int):
    """The tiled kernels for K = taps, S = stride: (forward, backward_data, weight_partials).
    They take flat arrays and their sizes as u64 (``dims``): every index is an unsigned
    offset, so no load pays Numba's stride arithmetic and negative-index check."""
    K, S, CH, WT = taps, stride, reduction_chunk(taps, stride), weight_tile(taps, stride)
    XS = TILE_T * S + K - 1        # input positions under a 128-position output tile
    DS = TILE_T // S + K + 1       # output positions that read a 128-position input tile (a bound)
    WXS = WT * S + K - 1           # input positions under the filter gradient's WT-position tile
    CK, TK = CH * K, TILE_C * K    # filter tiles' row lengths (shared shapes: constants, not products)
    UK, US, UR, UTX, UTY, UXS = u64(K), u64(S), u64(R), u64(TX), u64(TY), u64(XS)

    @bounded_jit(256, 2)  # at most 128 registers a thread
    def conv1d_forward_kernel(x, w, b, n_, c_in, length, c_out, l_out, padding, out):
        # x: N*C_in*L; w: C_out*C_in*K; b: C_out; sizes: u64; padding: int; out: N*C_out*L_out.
        # Grid (L_out tiles, C_out tiles, n strided). Thread (tx, ty): out[n, o0 + ty + 8a, t0 + tx + 32j].
        xs = cuda.shared.array((CH, XS), x.dtype)             # x[n, c0 + c, t0 * S - P + p]
        ws = cuda.shared.array((TILE_C, CK), x.dtype)         # w[o0 + o, c0 + c, k] at c * K + k
        acc = cuda.local.array((R, R), x.dtype)               # registers: the loops unroll
        tx, ty, zero = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y), x.dtype.type(0)
        t0, o0 = u64(cuda.blockIdx.x * TILE_T), u64(cuda.blockIdx.y * TILE_C)
        n = u64(cuda.blockIdx.z)
        while n < n_:
            for a in range(UR):
                for j in range(UR):
                    acc[a, j] = zero
            for c0 in range(u64(0), c_in, u64(CH)):
                for c in range(ty, u64(CH), UTY):              # the input tile, coalesced along p
                    for p in range(tx, UXS, UTX):
                        i = i64(t0 * US + p) - padding         # signed: the padding's zeros lie below 0
                        ok = c0 + c < c_in and 0 <= i < i64(length)
                        xs[c, p] = x[((n * c_in + c0 + c) * length) + u64(i)] if ok else zero
                for o in range(ty, u64(TILE_C), UTY):          # the filter tile: contiguous c * K + k
                    for r in range(tx, u64(CK), UTX):
                        ok = o0 + o < c_out and c0 * UK + r < c_in * UK
                        ws[o, r] = w[(o0 + o) * c_in * UK + c0 * UK + r] if ok else zero
                cuda.syncthreads()
                for c in range(min(u64(CH), c_in - c0)):       # the hot loop: shared memory only
                    for k in range(UK):
                        for a in range(UR):
                            wv = ws[ty + UTY * a, c * UK + k]
                            for j in range(UR):
                                acc[a, j] += wv * xs[c, (tx + UTX * j) * US + k]
                cuda.syncthreads()
            for a in range(UR):
                o = o0 + ty + UTY * a
                for j in range(UR):
                    t = t0 + tx + UTX * j
                    if o < c_out and t < l_out:
                        out[(n * c_out + o) * l_out + t] = acc[a, j] + b[o]
            n += u64(cuda.gridDim.z)

    @bounded_jit(256, 2)  # at most 128 registers a thread
    def conv1d_backward_data_kernel(dout, w, n_, c_in, length, c_out, l_out, padding, dx):
        # dout: N*C_out*L_out; w: C_out*C_in*K; sizes: u64; dx: N*C_in*L (written, a gather).
        # Grid (L tiles, C_in tiles, n strided). Thread (tx, ty): dx[n, c0 + ty + 8a, i0 + tx + 32j].
        ds = cuda.shared.array((CH, DS), dout.dtype)          # dout[n, o0 + o, t_first + q]
        ws = cuda.shared.array((CH, TK), dout.dtype)          # w[o0 + o, c0 + c, k] at c * K + k
        acc = cuda.local.array((R, R), dout.dtype)
        tx, ty, zero = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y), dx.dtype.type(0)
        i0, c0 = cuda.blockIdx.x * TILE_T, u64(cuda.blockIdx.y * TILE_C)
        t_first = (i0 + padding - (K - 1)) // S                # the first window a tile input is in (a floor)
        n = u64(cuda.blockIdx.z)
        while n < n_:
            for a in range(UR):
                for j in range(UR):
                    acc[a, j] = zero
            for o0 in range(u64(0), c_out, u64(CH)):
                for o in range(ty, u64(CH), UTY):
                    for q in range(tx, u64(DS), UTX):
                        t = t_first + i64(q)                   # signed: windows before the first are none
                        ok = o0 + o < c_out and 0 <= t < i64(l_out)
                        ds[o, q] = dout[(n * c_out + o0 + o) * l_out + u64(t)] if ok else zero
                    for r in range(tx, u64(TK), UTX):
                        ok = o0 + o < c_out and u64(c0) * UK + r < c_in * UK
                        ws[o, r] = w[(o0 + o) * c_in * UK + c0 * UK + r] if ok else zero
                cuda.syncthreads()
                for o in range(min(u64(CH), c_out - o0)):
                    for k in range(K):
                        for j in range(UR):
                            u = i0 + i64(tx + UTX * j) + padding - k  # tap k reads this input from window u / S
                            if u % S == 0:
                                dv = ds[o, u64(u // S - t_first)]
                                for a in range(UR):
                                    acc[a, j] += dv * ws[o, (ty + UTY * a) * UK + u64(k)]
                cuda.syncthreads()
            for a in range(UR):
                c = c0 + ty + UTY * a
                for j in range(UR):
                    i = u64(i0) + tx + UTX * j
                    if c < c_in and i < length:
                        dx[(n * c_in + c) * length + i] = acc[a, j]
            n += u64(cuda.gridDim.z)

    @bounded_jit(256, 2)  # at most 128 registers a thread
    def conv1d_backward_weight_partials_kernel(dout, x, n_, c_in, length, c_out, l_out, padding,
                                               tiles_per_part, partials):
        """Stage 1 for dw: thread (tx, ty) of part p sums, over the part's tiles of WT positions,
        the terms of dw[o0 + ty + 16a, c0 + tx + 16j, k] (a, j in 0, 1); writes partials[value, p]
        (flat: value * P + p)."""
        dsh = cuda.shared.array((TILE_C, WT), x.dtype)        # dout[n, o0 + o, t0 + q]
        xs = cuda.shared.array((TILE_C, WXS), x.dtype)        # x[n, c0 + c, t0 * S - P + q]
        acc = cuda.local.array((2, 2, K), x.dtype)
        tx, ty, zero = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y), x.dtype.type(0)
        o0, c0, p = u64(cuda.blockIdx.x * TILE_C), u64(cuda.blockIdx.y * TILE_C), u64(cuda.blockIdx.z)
        per_row = (l_out + u64(WT - 1)) // u64(WT)             # position tiles per example
        first = p * tiles_per_part
        n, tile = first // per_row, first % per_row            # once: then carried, no division in the loop
        for a in range(2):
            for j in range(2):
                for k in range(K):
                    acc[a, j, k] = zero
        for _ in range(tiles_per_part):
            if n < n_:                                         # the same for the whole block
                t0 = tile * u64(WT)
                for o in range(ty, u64(TILE_C), u64(16)):
                    for q in range(tx, u64(WT), u64(16)):
                        ok = o0 + o < c_out and t0 + q < l_out
                        dsh[o, q] = dout[(n * c_out + o0 + o) * l_out + t0 + q] if ok else zero
                for c in range(ty, u64(TILE_C), u64(16)):
                    for q in range(tx, u64(WXS), u64(16)):
                        i = i64(t0 * US + q) - padding
                        ok = c0 + c < c_in and 0 <= i < i64(length)
                        xs[c, q] = x[(n * c_in + c0 + c) * length + u64(i)] if ok else zero
                cuda.syncthreads()
                for q in range(min(u64(WT), l_out - t0)):      # shared memory only
                    d0, d1 = dsh[ty, q], dsh[ty + u64(16), q]
                    for k in range(UK):
                        x0, x1 = xs[tx, q * US + k], xs[tx + u64(16), q * US + k]
                        acc[0, 0, k] += d0 * x0
                        acc[0, 1, k] += d0 * x1
                        acc[1, 0, k] += d1 * x0
                        acc[1, 1, k] += d1 * x1
                cuda.syncthreads()
            tile += u64(1)
            if tile == per_row:
                tile, n = u64(0), n + u64(1)
        parts = u64(cuda.gridDim.z)
        for a in range(2):
            for j in range(2):
                o, c = o0 + ty + u64(16 * a), c0 + tx + u64(16 * j)
                if o < c_out and c < c_in:
                    for k in range(UK):
                        partials[((o * c_in + c) * UK + k) * parts + p] = acc[a, j, k]

    return conv1d_forward_kernel, conv1d_backward_data_kernel, conv1d_backward_weight_partials_kernel


# ---- the bias's stage 1 (stage 2 of both: version 1's sum_partials_kernel) -----------------

@cuda.jit
def conv1d_backward_bias_partials_kernel(dout, partials):
    """Stage 1 for db: block (o, p) sums rows dout[n, o, :] of the examples n = p, p + P, ...
    (each row read along its contiguous axis), then the block's threads as a tree."""
    shared = cuda.shared.array(THREADS_PER_BLOCK, dtype=partials.dtype)
    tid = cuda.threadIdx.x
    N, _, L_out = dout.shape
    o, p = cuda.blockIdx.x, cuda.blockIdx.y
    acc = partials.dtype.type(0)
    n = p
    while n < N:                                  # while, not range(): no division to count the steps
        t = tid
        while t < L_out:
            acc += dout[n, o, t]
            t += cuda.blockDim.x
        n += cuda.gridDim.y
    shared[tid] = acc
    block_tree_sum(shared, tid)
    if tid == 0:
        partials[o, p] = shared[0]


# ---- launchers: device arrays in, launched -------------------------------------------

def partials_per_value(terms):
    """Stage-1 parts per value: one per 128 of the N * L_out terms, at most MAX_PARTIALS."""
    return max(1, min(math.ceil(terms / TILE_T), MAX_PARTIALS))


def bias_parts(n: int, l_out: int) -> int:
    """The bias's stage-1 parts: one per example, at most MAX_PARTIALS."""
    return max(1, min(n, MAX_PARTIALS))


def _flat(a):
    return a.reshape(a.size)


def dims(n, c_in, length, c_out, l_out):
    return tuple(u64(v) for v in (n, c_in, length, c_out, l_out))  # the tiled kernels' sizes


def _tile_grid(length, channels, n):
    """(length tiles, channel tiles, examples): examples capped at 65,535 (the kernels stride)."""
    return max(1, math.ceil(length / TILE_T)), max(1, math.ceil(channels / TILE_C)), max(1, min(n, MAX_GRID[2]))


def conv1d_forward_device(d_x, d_w, d_b, stride, padding, d_out):
    """Kernel 1: d_out (N, C_out, L_out), 128 x 32 tiles."""
    (N, C_in, L), (_, C_out, L_out) = d_x.shape, d_out.shape
    forward = tiled(d_w.shape[2], int(stride))[0]
    forward[_tile_grid(L_out, C_out, N), (TX, TY)](
        _flat(d_x), _flat(d_w), d_b, *dims(N, C_in, L, C_out, L_out), int(padding), _flat(d_out))


def conv1d_backward_data_device(d_dout, d_w, stride, padding, d_dx):
    """Kernel 2: d_dx (N, C_in, L), gathered, 128 x 32 tiles."""
    (N, C_in, L), (_, C_out, L_out) = d_dx.shape, d_dout.shape
    backward_data = tiled(d_w.shape[2], int(stride))[1]
    backward_data[_tile_grid(L, C_in, N), (TX, TY)](
        _flat(d_dout), _flat(d_w), *dims(N, C_in, L, C_out, L_out), int(padding), _flat(d_dx))


def conv1d_backward_weight_device(d_dout, d_x, kernel_size, stride, padding, d_partials, d_dw, threads=THREADS_PER_BLOCK):
    """Kernel 3, both stages: d_dw (C_out * C_in * K,) through d_partials (C_out * C_in * K, P).
    Stage 1's grid (C_out tiles, C_in tiles, P), P <= MAX_PARTIALS; each part takes a run of
    the N * ceil(L_out / WT) position tiles (``weight_tile``)."""
    (N, C_out, L_out), (_, C_in, L) = d_dout.shape, d_x.shape
    parts = d_partials.shape[1]
    tiles = N * math.ceil(L_out / weight_tile(int(kernel_size), int(stride)))
    partials_kernel = tiled(int(kernel_size), int(stride))[2]
    partials_kernel[(math.ceil(C_out / TILE_C), math.ceil(C_in / TILE_C), parts), (16, 16)](
        _flat(d_dout), _flat(d_x), *dims(N, C_in, L, C_out, L_out), int(padding), u64(math.ceil(tiles / parts)),
        _flat(d_partials))
    reduction_launch(sum_partials_kernel, d_partials.shape[0], threads)(d_partials, d_dw)


def conv1d_backward_bias_device(d_dout, d_partials, d_db, threads=THREADS_PER_BLOCK):
    """Kernel 3's bias, both stages: d_db (C_out,) through d_partials (C_out, P), P <= 65,535."""
    reduction_launch(conv1d_backward_bias_partials_kernel, d_partials.shape, threads)(d_dout, d_partials)
    reduction_launch(sum_partials_kernel, d_partials.shape[0], threads)(d_partials, d_db)


# ---- host functions: version 1's, on these launchers -------------------------------------------

def conv1d_forward(x, w, b, stride, padding):
    return v1.conv1d_forward(x, w, b, stride, padding, launchers=sys.modules[__name__])


def conv1d_backward_data(dout, w, input_length, stride, padding):
    return v1.conv1d_backward_data(dout, w, input_length, stride, padding, launchers=sys.modules[__name__])


def conv1d_backward_weight(dout, x, kernel_size, stride, padding):
    return v1.conv1d_backward_weight(dout, x, kernel_size, stride, padding, launchers=sys.modules[__name__])


def conv1d_backward_bias(dout):
    return v1.conv1d_backward_bias(dout, launchers=sys.modules[__name__])


def conv1d_backward(dout, x, w, stride, padding):
    return v1.conv1d_backward(dout, x, w, stride, padding, launchers=sys.modules[__name__])
