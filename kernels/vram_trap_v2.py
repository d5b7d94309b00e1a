"""The checkpointed MLP's layer kernels, version 2: tiled matrix products (issue 34).

Version 1 (kernels/vram_trap.py) computes each output with one thread reading a row of h and
a column of W straight from global memory; it teaches the memory schedule (the bit mask,
one writer a byte) and issue 34 measured gradient accumulation's MLP on it at 0.10x PyTorch.
Here each kernel is the tiled product of kernels/common/tiled_matmul.py (64 x 64 output tiles
through shared memory, 4 x 4 a thread in registers, unsigned offsets), with the layer's own
work folded into the tile copies and the epilogue:

  1. linear_relu_forward_kernel: a = relu(h W + b), and the mask bits packed in the block:
     each thread posts z > 0 for its outputs in shared memory, then packs whole bytes (one
     writer a byte, as version 1). Bytes may span rows, not blocks: a block's 64 rows start
     on a byte, and its columns are all D_out (D_out <= 64) or whole bytes (D_out % 8 == 0).
  2. linear_forward_kernel: z = h W + b.
  3. linear_backward_input_kernel: dh = dz W^T, dz = dout gated by the mask bit as the tile
     is copied (never stored), W^T read as W lies (``load_rows``).
  4. linear_params_partials_kernel: part p of the rows gives h_p^T dz_p, a (D_in + 1, D_out)
     partial with the bias as a row of ones appended to h^T; version 1's sum kernel (4b)
     adds the parts, or adds them into accumulation buffers (question 13).
  5. mse_loss_backward_kernel: dout = (out - y) / N and each row's sum of squares, a warp a
     row (lanes on consecutive columns, the sum by warp shuffles).

What the static table predicts (benchmarks/results/kernels_static.md): global loads only in
the tile copies, no local memory, no 64-bit division in a loop, at most 128 registers.

Shapes as version 1: h (N, D_in), W (D_in, D_out), b (D_out,), a, z, dout (N, D_out), mask
uint8 (ceil(N * D_out / 8),), dh (N, D_in), partials (P, D_in + 1, D_out); the kernels take
them flat with their sizes as u64. Tests: tests/kernels/test_vram_trap_kernels.py.
"""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.kernels.common.patterns import WARP, bounded_jit, u32, u64, warp_sum
from backprop_traps.kernels.common.tiled_matmul import (BK, BM, BN, R, T, THREADS, TILE_A, TILE_B, grid, load_rows,
                                                        multiply_tiles, product_tile)
from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.vram_trap import THREADS_PER_BLOCK, linear_params_sum_kernel, partials_shape


# ---- the tile copies of a gated dz, and of h^T with a row of ones ------------------------

@cuda.jit(device=True)
def gated(dout, mask, relu, f, zero):
    """dz at flat f: dout[f], or zero where the forward's ReLU was off (np.packbits order)."""
    if relu and (mask[f // u64(8)] >> (u64(7) - f % u64(8))) & u64(1) == u64(0):
        return zero
    return dout[f]


@cuda.jit(device=True)
def load_rows_gated(tile, dout, mask, relu, rows, cols, r0, c0, tid, zero):
    """load_rows of dz (rows x cols, flat): tile[k, m] = dz[r0 + m, c0 + k]."""
    for e in range(tid, BM * BK, T * T):
        m, k = u64(e // BK), u64(e % BK)
        r, c = r0 + m, c0 + k
        tile[k, m] = gated(dout, mask, relu, r * cols + c, zero) if r < rows and c < cols else zero


@cuda.jit(device=True)
def load_cols_gated(tile, dout, mask, relu, rows, cols, r0, c0, tid, zero):
    """load_cols of dz: tile[k, n] = dz[r0 + k, c0 + n]."""
    for e in range(tid, BK * BN, T * T):
        k, n = u64(e // BN), u64(e % BN)
        r, c = r0 + k, c0 + n
        tile[k, n] = gated(dout, mask, relu, r * cols + c, zero) if r < rows and c < cols else zero


@cuda.jit(device=True)
def load_h_transposed(tile, h, rows, d_in, r0, i0, tid, zero, one):
    """tile[k, m] = [h | 1]^T[i0 + m, r0 + k]: h's row r0 + k, columns i0 .., and 1 at column
    D_in (the bias's row of dW); consecutive threads on consecutive columns of h."""
    for e in range(tid, BK * BM, T * T):
        k, m = u64(e // BM), u64(e % BM)
        r, i = r0 + k, i0 + m
        value = zero
        if r < rows and i < d_in:
            value = h[r * d_in + i]
        elif r < rows and i == d_in:
            value = one
        tile[k, m] = value


@cuda.jit(device=True)
def clear(acc, zero):
    for i in range(R):
        for j in range(R):
            acc[i, j] = zero


# ---- 1. linear + ReLU forward with the packed mask; 2. linear forward -----------------------

@bounded_jit(T * T, 2)  # at most 128 registers a thread
def linear_relu_forward_kernel(h, W, b, a, mask, n_rows, d_in, d_out):
    # h: N*D_in, W: D_in*D_out, b: D_out; a: N*D_out, mask: ceil(N*D_out/8) (written); sizes u64.
    # Grid (D_out / 64, N / 64 strided): thread (tx, ty) a[m0 + ty + 16i, n0 + tx + 16j].
    a_tile = cuda.shared.array(TILE_A, h.dtype)
    b_tile = cuda.shared.array(TILE_B, h.dtype)
    acc = cuda.local.array((R, R), h.dtype)
    tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
    tid, zero = cuda.threadIdx.y * T + cuda.threadIdx.x, h.dtype.type(0)
    n0, m0 = u64(cuda.blockIdx.x * BN), u64(cuda.blockIdx.y * BM)
    on = cuda.shared.array((BM, BN), np.uint8)             # z > 0 for the block's outputs
    width = min(u64(BN), d_out - n0)                       # this block's columns
    while m0 < n_rows:                                     # the same for the whole block
        product_tile(acc, a_tile, b_tile, h, W, False, False, n_rows, d_out, u64(0), d_in, d_in, m0, n0, tid, tx, ty,
                     zero)
        for i in range(R):
            m = m0 + ty + u64(16 * i)
            for j in range(R):
                n = n0 + tx + u64(16 * j)
                if m < n_rows and n < d_out:
                    z = acc[i, j] + b[n]
                    a[m * d_out + n] = z if z > zero else zero
                    on[ty + u64(16 * i), tx + u64(16 * j)] = 1 if z > zero else 0
        cuda.syncthreads()
        rows, width32 = min(u64(BM), n_rows - m0), u32(width)  # the block's bits: rows x width
        row_bytes = width32 // u32(8)                      # a row's whole bytes, when D_out > 64
        start = (m0 * d_out + n0) // u64(8)                # the block's first byte
        for byte in range(u64(tid), (rows * width + u64(7)) // u64(8), u64(T * T)):
            f = u32(byte * u64(8))                         # the byte's first bit, in the block's order
            r, c = f // width32, f % width32               # 32-bit, once a byte; then carried along
            bits = 0
            for t in range(8):
                if r < rows:
                    bits |= on[r, c] << (7 - t)
                c += u32(1)
                if c == width32:
                    r, c = r + u32(1), u32(0)
            if width == d_out:                             # whole rows: the block's bytes are consecutive
                mask[start + byte] = bits
            else:                                          # whole bytes a row: row by row
                q = u32(byte)
                mask[start + u64(q // row_bytes) * (d_out // u64(8)) + u64(q % row_bytes)] = bits
        cuda.syncthreads()                                 # the flags are read before the next rows post theirs
        m0 += u64(cuda.gridDim.y * BM)


@bounded_jit(T * T, 2)
def linear_forward_kernel(h, W, b, z, n_rows, d_in, d_out):
    # h: N*D_in, W: D_in*D_out, b: D_out; z: N*D_out (written); sizes u64. Grid as kernel 1.
    a_tile = cuda.shared.array(TILE_A, h.dtype)
    b_tile = cuda.shared.array(TILE_B, h.dtype)
    acc = cuda.local.array((R, R), h.dtype)
    tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
    tid, zero = cuda.threadIdx.y * T + cuda.threadIdx.x, h.dtype.type(0)
    n0, m0 = u64(cuda.blockIdx.x * BN), u64(cuda.blockIdx.y * BM)
    while m0 < n_rows:
        product_tile(acc, a_tile, b_tile, h, W, False, False, n_rows, d_out, u64(0), d_in, d_in, m0, n0, tid, tx, ty,
                     zero)
        for i in range(R):
            m = m0 + ty + u64(16 * i)
            for j in range(R):
                n = n0 + tx + u64(16 * j)
                if m < n_rows and n < d_out:
                    z[m * d_out + n] = acc[i, j] + b[n]
        m0 += u64(cuda.gridDim.y * BM)


# ---- 3. + 4. backward, through the mask ---------------------------------------------------

@bounded_jit(T * T, 2)
def linear_backward_input_kernel(dout, mask, relu, W, dh, n_rows, d_in, d_out):
    # dout: N*D_out, mask as kernel 1's, relu: bool; W: D_in*D_out; dh: N*D_in (written).
    # dh = dz W^T: grid (D_in / 64, N / 64 strided).
    g_tile = cuda.shared.array(TILE_A, dout.dtype)      # dz[m0 + m, k0 + k] at [k, m]
    w_tile = cuda.shared.array(TILE_B, dout.dtype)      # W[n0 + n, k0 + k] at [k, n]: W^T's tile
    acc = cuda.local.array((R, R), dout.dtype)
    tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
    tid, zero = cuda.threadIdx.y * T + cuda.threadIdx.x, dout.dtype.type(0)
    n0 = u64(cuda.blockIdx.x * BN)
    m0 = u64(cuda.blockIdx.y * BM)
    while m0 < n_rows:
        clear(acc, zero)
        for k0 in range(u64(0), d_out, u64(BK)):
            load_rows_gated(g_tile, dout, mask, relu, n_rows, d_out, m0, k0, tid, zero)
            load_rows(w_tile, W, d_in, d_out, n0, k0, tid, zero, d_out)
            cuda.syncthreads()
            multiply_tiles(g_tile, w_tile, acc, tx, ty)
            cuda.syncthreads()
        for i in range(R):
            m = m0 + ty + u64(16 * i)
            for j in range(R):
                n = n0 + tx + u64(16 * j)
                if m < n_rows and n < d_in:
                    dh[m * d_in + n] = acc[i, j]
        m0 += u64(cuda.gridDim.y * BM)


@bounded_jit(T * T, 2)
def linear_params_partials_kernel(dout, mask, relu, h, partials, n_rows, d_in, d_out, rows_per_part):
    # partials: P*(D_in + 1)*D_out, part p = blockIdx.z: sum over its rows of [h | 1]^T dz,
    # accumulated in the partials' dtype. Grid (D_out / 64, (D_in + 1) / 64, P).
    h_tile = cuda.shared.array(TILE_A, h.dtype)         # [h | 1]^T[i0 + m, r0 + k] at [k, m]
    g_tile = cuda.shared.array(TILE_B, h.dtype)         # dz[r0 + k, n0 + n] at [k, n]
    acc = cuda.local.array((R, R), partials.dtype)
    tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
    tid, zero, one = cuda.threadIdx.y * T + cuda.threadIdx.x, h.dtype.type(0), h.dtype.type(1)
    n0, i0, p = u64(cuda.blockIdx.x * BN), u64(cuda.blockIdx.y * BM), u64(cuda.blockIdx.z)
    first = p * rows_per_part
    stop = min(first + rows_per_part, n_rows)
    clear(acc, partials.dtype.type(0))
    for r0 in range(first, stop, u64(BK)):
        load_h_transposed(h_tile, h, stop, d_in, r0, i0, tid, zero, one)
        load_cols_gated(g_tile, dout, mask, relu, stop, d_out, r0, n0, tid, zero)
        cuda.syncthreads()
        multiply_tiles(h_tile, g_tile, acc, tx, ty)
        cuda.syncthreads()
    for i in range(R):
        m = i0 + ty + u64(16 * i)
        for j in range(R):
            n = n0 + tx + u64(16 * j)
            if m <= d_in and n < d_out:
                partials[(p * (d_in + u64(1)) + m) * d_out + n] = acc[i, j]


# ---- 5. the loss's gradient: a warp per row -------------------------------------------------

@cuda.jit
def mse_loss_backward_kernel(out, y, dout, row_sq, inv_n, n_rows, d):
    # out, y, dout: N*D (flat), row_sq: N; inv_n in out's dtype; sizes u64. Block (32, 8): warp
    # ty takes rows n0 + ty, + 8 * gridDim.y ..., its lanes the columns lane, lane + 32, ...
    # (version 1 gave a thread a row: a warp read 32 rows' worth of cache lines a step).
    lane = u64(cuda.threadIdx.x)
    n = u64(cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    zero = out.dtype.type(0)
    while n < n_rows:                                      # the same for the whole warp
        acc = zero
        for j in range(lane, d, u64(WARP)):
            e = out[n * d + j] - y[n * d + j]
            dout[n * d + j] = e * inv_n
            acc += e * e
        acc = warp_sum(acc)
        if lane == 0:
            row_sq[n] = acc
        n += u64(cuda.gridDim.y * cuda.blockDim.y)


# ---- launchers: device arrays in, launched --------------------------------------------------

def _flat(a):
    return a.reshape(a.size)


def packs_in_blocks(d_out: int) -> bool:
    """Whether kernel 1's blocks own whole mask bytes: D_out <= 64, or a multiple of 8."""
    return d_out <= BN or d_out % 8 == 0


def linear_relu_forward_device(d_h, d_W, d_b, d_a, d_mask):
    """Kernel 1: d_a (N, D_out) and d_mask (ceil(N * D_out / 8),). D_out <= 64 or a multiple of 8
    (``packs_in_blocks``; version 1 takes any)."""
    (n, d_in), d_out = d_h.shape, d_W.shape[1]
    if not packs_in_blocks(d_out):
        raise ValueError(f"version 2 packs the mask a block at a time: D_out must be at most {BN} or a "
                         f"multiple of 8, not {d_out}; version 1 (kernels/vram_trap.py) takes any")
    linear_relu_forward_kernel[grid(n, d_out), THREADS](
        _flat(d_h), _flat(d_W), d_b, _flat(d_a), d_mask, u64(n), u64(d_in), u64(d_out))


def linear_forward_device(d_h, d_W, d_b, d_z):
    """Kernel 2: d_z (N, D_out)."""
    (n, d_in), d_out = d_h.shape, d_W.shape[1]
    linear_forward_kernel[grid(n, d_out), THREADS](_flat(d_h), _flat(d_W), d_b, _flat(d_z), u64(n), u64(d_in), u64(d_out))


def backward_input(d_dout, d_mask, relu, d_W, d_dh):
    """Kernel 3: d_dh (N, D_in) = dz @ W.T."""
    (n, d_out), d_in = d_dout.shape, d_W.shape[0]
    linear_backward_input_kernel[grid(n, d_in), THREADS](
        _flat(d_dout), d_mask, bool(relu), _flat(d_W), _flat(d_dh), u64(n), u64(d_in), u64(d_out))


def backward_params(d_dout, d_mask, relu, d_h, d_dW, d_db, accumulate=False, d_partials=None):
    """Kernels 4 and version 1's 4b: dW, db written (or added into, with ``accumulate``), through
    d_partials (``partials_shape``, in dW's dtype; allocated here when None)."""
    (n, d_in), d_out = d_h.shape, d_dout.shape[1]
    if d_partials is None:
        d_partials = cuda.device_array(partials_shape(n, d_in, d_out), dtype=d_dW.dtype)
    parts = d_partials.shape[0]
    linear_params_partials_kernel[(math.ceil(d_out / BN), math.ceil((d_in + 1) / BM), parts), THREADS](
        _flat(d_dout), d_mask, bool(relu), _flat(d_h), _flat(d_partials), u64(n), u64(d_in), u64(d_out),
        u64(math.ceil(n / parts)))
    linear_params_sum_kernel[max(1, math.ceil((d_in + 1) * d_out / THREADS_PER_BLOCK)), THREADS_PER_BLOCK](
        d_partials, d_dW, d_db, accumulate)


def mse_loss_backward_device(d_out, d_y, d_dout, d_row_sq, inv_n=None):
    """Kernel 5: d_dout (N, D) = (out - y) * inv_n (default 1 / N), d_row_sq (N,): a warp a row."""
    n, d = d_out.shape
    inv_n = 1.0 / n if inv_n is None else inv_n
    mse_loss_backward_kernel[(1, max(1, min(math.ceil(n / 8), MAX_GRID[1]))), (WARP, 8)](
        _flat(d_out), _flat(d_y), _flat(d_dout), d_row_sq, d_out.dtype.type(inv_n), u64(n), u64(d))


# ---- host functions: numpy in, numpy out (version 1's contract) ------------------------------

def linear_relu_forward(h, W, b):
    """(a, mask) as vram_trap.linear_relu_forward."""
    h = np.ascontiguousarray(h)
    n, d_out = h.shape[0], W.shape[1]
    d_a, d_mask = cuda.device_array((n, d_out), h.dtype), cuda.device_array(math.ceil(n * d_out / 8), np.uint8)
    linear_relu_forward_device(cuda.to_device(h), cuda.to_device(np.ascontiguousarray(W, h.dtype)),
                               cuda.to_device(np.ascontiguousarray(b, h.dtype)), d_a, d_mask)
    return d_a.copy_to_host(), d_mask.copy_to_host()


def linear_forward(h, W, b):
    """z = h @ W + b as vram_trap.linear_forward."""
    h = np.ascontiguousarray(h)
    d_z = cuda.device_array((h.shape[0], W.shape[1]), h.dtype)
    linear_forward_device(cuda.to_device(h), cuda.to_device(np.ascontiguousarray(W, h.dtype)),
                          cuda.to_device(np.ascontiguousarray(b, h.dtype)), d_z)
    return d_z.copy_to_host()


def linear_relu_backward(da, mask, h, W):
    """(dh, dW, db) as vram_trap.linear_relu_backward (mask None: a plain linear layer)."""
    h = np.ascontiguousarray(h)
    relu = mask is not None
    d_mask = cuda.to_device(np.ascontiguousarray(mask, np.uint8) if relu else np.zeros(1, np.uint8))
    d_da, d_h = cuda.to_device(np.ascontiguousarray(da, h.dtype)), cuda.to_device(h)
    d_W = cuda.to_device(np.ascontiguousarray(W, h.dtype))
    d_dh, d_dW, d_db = (cuda.device_array(s, h.dtype) for s in (h.shape, W.shape, W.shape[1]))
    backward_params(d_da, d_mask, relu, d_h, d_dW, d_db)
    backward_input(d_da, d_mask, relu, d_W, d_dh)
    return d_dh.copy_to_host(), d_dW.copy_to_host(), d_db.copy_to_host()
