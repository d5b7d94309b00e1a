"""An Elman RNN through time, Numba CUDA, version 1: the step-by-step forward, the reversed backward
with truncation, one kernel for every step's weight gradients, and global-norm clipping.

A recurrence is sequential in time: step t needs step t - 1's state, so the time loop stays
on the host and each step is one launch over its N x H outputs (cuDNN's persistent RNN
kernels keep W_hh in registers across steps instead; that is the next step up).

1. ``step_forward_kernel``: thread (n, j) computes z = b_j + x_t[n] . W_xh[:, j] +
   h_prev[n] . W_hh[:, j] and writes tanh(z) into hs[t]. One launch per step.
2. ``step_backward_kernel``: thread (n, i) first computes the row dz_t[n, :] =
   (dhs[t, n] + carry[n]) * (1 - hs[t, n]^2) itself (H products, cheaper than a second
   launch and a barrier across blocks), stores dz_t[n, i], and writes
   dx_t[n, i] = dz_t[n] . W_xh[i, :] and the carry to step t - 1, dz_t[n] . W_hh[i, :],
   times 0 where truncation cuts (t a positive multiple of k). Two carry buffers alternate.
   One launch per step, in reverse.
3. ``weight_grads_kernel``: after the loop, one thread per weight adds its products over
   all T * N (step, sequence) pairs from the stored dz: dW_xh = sum x_t^T dz_t,
   dW_hh = sum h_{t-1}^T dz_t, db = sum dz_t. The sum over every step is the whole point of
   the question; here it is one loop in a fixed order, no atomics, the same bits every run.
4. ``sum_squares_kernel`` and ``scale_kernel``: global-norm clipping. Each of 4 blocks
   reduces its grid-stride share of one tensor's squares in a shared-memory tree; the host
   adds the partials of every tensor in a fixed order, takes one norm, and one factor scales
   every tensor, one thread an entry.

This is the version to read first. Version 2 (kernels/bptt_v2.py) keeps kernels 1 to 3 (it
imports them from here) and makes the clipping fast: issue 34 found kernel 4a's 4 blocks of
128 threads far too few to fill a GPU; version 2 reads 4 entries a thread in 128-bit loads
over while-loop grid strides, with enough blocks to fill a GPU (``reduce_blocks``) and
warp-shuffle block sums. The launchers and host functions take the same arguments in both.

Memory traffic: the forward reads x and writes hs (T*N*(D + H)) plus W's per step (from
cache); the backward reads dhs, hs, and writes dx and dz (T*N*(D + 3H)), then reads x, hs and
dz again for the weight gradients.

Run the tests (both versions) under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_bptt_kernels.py
Check and time it: python -m backprop_traps.kernels.bptt (from any folder) runs both versions on
the benchmark's tiny cases (kernels/cases/bptt.py) in float64 and float32 against the
solution notebook, the CPU reference, and times them (kernels/runtime/self_check.py; the simulator
without a GPU).

Shapes: T steps, N sequences, D inputs, H hidden units. x (T, N, D), h0 (N, H), hs, dhs,
dzs (T, N, H), W_xh (D, H), W_hh (H, H), b (H,). Math runs in x's dtype.
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.bptt: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math
import sys

import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID

TILE = 16           # threads per block along each axis of the (rows, H) grids
REDUCE_THREADS = 128
REDUCE_BLOCKS = 4   # blocks of the sum of squares: partial sums the host adds in a fixed order


def _grid(rows: int, cols: int, tile: int = TILE):
    """Tiles of (rows, cols); grid y capped at CUDA's 65,535 (the kernels stride over columns)."""
    return (max(1, math.ceil(rows / tile)), max(1, min(math.ceil(cols / tile), MAX_GRID[1]))), (tile, tile)


# 1. one step of the forward ------------------------------------------------------------------
@cuda.jit
def step_forward_kernel(x_t, h_prev, W_xh, W_hh, b, h_out):
    # x_t: N, D; h_prev: N, H; W_xh: D, H; W_hh: H, H; b: H; h_out: N, H (written)
    n, first = cuda.grid(2)
    columns = cuda.gridsize(2)[1]  # < H only past grid y's 65,535 blocks: then each thread takes several
    if n >= h_out.shape[0]:
        return
    for j in range(first, h_out.shape[1], columns):
        z = b[j]
        for d in range(x_t.shape[1]):
            z += x_t[n, d] * W_xh[d, j]
        for i in range(h_prev.shape[1]):
            z += h_prev[n, i] * W_hh[i, j]
        h_out[n, j] = math.tanh(z)


# 2. one step of the backward, in reverse -------------------------------------------------------
@cuda.jit
def step_backward_kernel(dhs_t, carry_in, hs_t, W_xh, W_hh, keep, zero, one, dz_t, dx_t, carry_out):
    # dhs_t, carry_in, hs_t: N, H; W_xh: D, H; W_hh: H, H; keep: 0 or 1 (truncation);
    # zero, one: in the launch's dtype (no float64 in a float32 launch);
    # dz_t: N, H, dx_t: N, D, carry_out: N, H (written). Thread (n, i), i over max(D, H)
    # (a grid-stride loop past grid y's 65,535 blocks).
    n, first = cuda.grid(2)
    N, H = hs_t.shape
    D = W_xh.shape[0]
    if n >= N:
        return
    for i in range(first, max(D, H), cuda.gridsize(2)[1]):
        acc_x, acc_h = zero, zero
        for j in range(H):  # dz_t[n, j], recomputed by each thread of the row: no barrier needed
            h = hs_t[n, j]
            dz = (dhs_t[n, j] + carry_in[n, j]) * (one - h * h)
            if i < D:
                acc_x += dz * W_xh[i, j]
            if i < H:
                acc_h += dz * W_hh[i, j]
                if j == i:
                    dz_t[n, i] = dz
        if i < D:
            dx_t[n, i] = acc_x
        if i < H:
            carry_out[n, i] = acc_h * keep


# 3. the weight gradients, every step at once ---------------------------------------------------
@cuda.jit
def weight_grads_kernel(x, h0, hs, dzs, zero, one, dW_xh, dW_hh, db):
    # x: T, N, D; h0: N, H; hs, dzs: T, N, H; dW_xh: D, H, dW_hh: H, H, db: H (written).
    # Row r of the grid: r < D is dW_xh's row r, then dW_hh's rows, then db. Columns j stride
    # past grid y's 65,535 blocks.
    r, first = cuda.grid(2)
    T, N, D = x.shape
    H = hs.shape[2]
    if r > D + H:
        return
    for j in range(first, H, cuda.gridsize(2)[1]):
        acc = zero
        for t in range(T):
            for n in range(N):
                if r < D:
                    a = x[t, n, r]
                elif r < D + H:
                    a = h0[n, r - D] if t == 0 else hs[t - 1, n, r - D]
                else:
                    a = one
                acc += a * dzs[t, n, j]
        if r < D:
            dW_xh[r, j] = acc
        elif r < D + H:
            dW_hh[r - D, j] = acc
        else:
            db[j] = acc


# 4. global-norm clipping ------------------------------------------------------------------------
@cuda.jit
def sum_squares_kernel(g, partials):
    # g: flat (M,); partials: one per block (written), a tree in shared memory
    s = cuda.shared.array(REDUCE_THREADS, g.dtype)
    tid = cuda.threadIdx.x
    acc = g.dtype.type(0)
    for k in range(cuda.grid(1), g.size, cuda.gridsize(1)):
        acc += g[k] * g[k]
    s[tid] = acc
    cuda.syncthreads()
    stride = REDUCE_THREADS // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        partials[cuda.blockIdx.x] = s[0]


@cuda.jit
def scale_kernel(g, factor, out):
    # g, out: flat (M,); out = g * factor, one thread an entry
    k = cuda.grid(1)
    if k < g.size:
        out[k] = g[k] * factor


# launchers: device arrays in, launched ---------------------------------------------------------
def step_forward_device(d_x_t, d_h_prev, d_Wxh, d_Whh, d_b, d_h_out):
    """Kernel 1, one step: d_h_out (N, H), a thread per (n, j)."""
    N, H = d_h_out.shape
    step_forward_kernel[_grid(N, H)](d_x_t, d_h_prev, d_Wxh, d_Whh, d_b, d_h_out)


def step_backward_device(d_dhs_t, d_carry_in, d_hs_t, d_Wxh, d_Whh, keep, d_dz_t, d_dx_t, d_carry_out):
    """Kernel 2, one step in reverse: d_dz_t, d_dx_t, d_carry_out; keep 0 cuts the carry."""
    dtype = np.dtype(d_hs_t.dtype)
    N, H = d_hs_t.shape
    step_backward_kernel[_grid(N, max(d_Wxh.shape[0], H))](
        d_dhs_t, d_carry_in, d_hs_t, d_Wxh, d_Whh, dtype.type(keep), dtype.type(0), dtype.type(1),
        d_dz_t, d_dx_t, d_carry_out)


def weight_grads_device(d_x, d_h0, d_hs, d_dzs, d_dW_xh, d_dW_hh, d_db):
    """Kernel 3, every step at once: d_dW_xh (D, H), d_dW_hh (H, H), d_db (H,)."""
    dtype = np.dtype(d_x.dtype)
    D, H = d_dW_xh.shape
    weight_grads_kernel[_grid(D + H + 1, H)](d_x, d_h0, d_hs, d_dzs, dtype.type(0), dtype.type(1),
                                             d_dW_xh, d_dW_hh, d_db)


def reduce_blocks(size: int) -> int:
    """Kernel 4a's blocks for M entries: REDUCE_BLOCKS, whatever M (they stride over it)."""
    return REDUCE_BLOCKS


def sum_squares_device(d_g, d_partials):
    """Kernel 4a: one partial sum of squares per block (d_partials.size blocks, grid-stride)."""
    sum_squares_kernel[d_partials.size, REDUCE_THREADS](d_g, d_partials)


def scale_device(d_g, factor, d_out):
    """Kernel 4b: d_out = d_g * factor, one thread per entry."""
    scale_kernel[max(1, math.ceil(d_g.size / REDUCE_THREADS)), REDUCE_THREADS](d_g, d_g.dtype.type(factor), d_out)


# host functions: numpy in, numpy out -----------------------------------------------------------
def rnn_forward(x, h0, W_xh, W_hh, b):
    """hs (T, N, H) as the solution's ``rnn_forward``, in x's dtype."""
    x = np.ascontiguousarray(x)
    dtype, (T, N, _) = x.dtype, x.shape
    H = W_hh.shape[0]
    d_x = cuda.to_device(x)
    d_h0, d_Wxh, d_Whh, d_b = (cuda.to_device(np.ascontiguousarray(a, dtype=dtype)) for a in (h0, W_xh, W_hh, b))
    hs = cuda.device_array((T, N, H), dtype=dtype)
    for t in range(T):  # sequential in time: one launch per step
        step_forward_device(d_x[t], d_h0 if t == 0 else hs[t - 1], d_Wxh, d_Whh, d_b, hs[t])
    return hs.copy_to_host()


def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):
    """(dx, dh0, dW_xh, dW_hh, db) as the solution's ``rnn_backward``, in x's dtype."""
    x = np.ascontiguousarray(x)
    dtype, (T, N, D) = x.dtype, x.shape
    H = W_hh.shape[0]
    d_x, d_h0, d_hs, d_dhs, d_Wxh, d_Whh = (cuda.to_device(np.ascontiguousarray(a, dtype=dtype))
                                            for a in (x, h0, hs, dhs, W_xh, W_hh))
    dx, dzs = cuda.device_array((T, N, D), dtype=dtype), cuda.device_array((T, N, H), dtype=dtype)
    carries = [cuda.to_device(np.zeros((N, H), dtype)), cuda.device_array((N, H), dtype=dtype)]
    for step, t in enumerate(reversed(range(T))):
        keep = 0 if t > 0 and t % k == 0 else 1  # t starts a chunk: cut the carry
        step_backward_device(d_dhs[t], carries[step % 2], d_hs[t], d_Wxh, d_Whh, keep, dzs[t], dx[t],
                             carries[(step + 1) % 2])
    dh0 = carries[T % 2]  # what step 0 carried out
    dW_xh, dW_hh = cuda.device_array((D, H), dtype=dtype), cuda.device_array((H, H), dtype=dtype)
    db = cuda.device_array(H, dtype=dtype)
    weight_grads_device(d_x, d_h0, d_hs, dzs, dW_xh, dW_hh, db)
    return (dx.copy_to_host(), dh0.copy_to_host(), dW_xh.copy_to_host(), dW_hh.copy_to_host(),
            db.copy_to_host())


def _launchers(launchers):
    """The module whose launchers run: this one (None), or version 2's, which calls these host
    functions with itself (kernels/bptt_v2.py imports this module, not the reverse)."""
    return sys.modules[__name__] if launchers is None else launchers


def clip_grad_norm(grads, max_norm, blocks=None, launchers=None):
    """(clipped, total_norm) as the solution's ``clip_grad_norm``; ``blocks``: kernel 4a's
    (default ``reduce_blocks``)."""
    launch = _launchers(launchers)
    flats = [cuda.to_device(np.ascontiguousarray(g).ravel()) for g in grads]
    total = 0.0
    for g in flats:  # partial sums per block, added on the host in a fixed order
        partials = cuda.device_array(blocks or launch.reduce_blocks(g.size), dtype=g.dtype)
        launch.sum_squares_device(g, partials)
        total += float(partials.copy_to_host().sum())
    total_norm = math.sqrt(total)
    factor = max_norm / total_norm if total_norm > max_norm else 1.0
    clipped = []
    for g, shape in zip(flats, (np.shape(a) for a in grads)):
        out = cuda.device_array(g.size, dtype=g.dtype)
        launch.scale_device(g, factor, out)
        clipped.append(out.copy_to_host().reshape(shape))
    return clipped, total_norm


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("bptt"))
