"""Tiled attention, Numba CUDA: a fused forward with an online softmax, and the backward that
recomputes each tile of probabilities from the saved log-sum-exp. No (N, N) array, anywhere.

The plan (FlashAttention-2's, one thread per row to keep it readable):

1. ``forward``: one block per tile of T queries of one head, one thread per query (the
   blocks of all heads along grid x: ``head_and_first_row``). The
   block walks over the key tiles; each K/V tile is loaded into shared memory once, by all
   T threads together (consecutive threads on consecutive columns: coalesced), and then
   read by every thread. A thread keeps a running max ``m`` and a running sum ``l`` in
   registers, and its query row and the unnormalised output ``acc`` in its own padded row
   of shared memory (no arrays of d per thread in registers: no spills), rescaling ``l`` and ``acc`` by ``exp(m_old - m_new)`` when the max grows, so no
   exponent is ever positive. It writes ``o = acc / l`` and ``lse = m + log(l)``. Causal
   blocks stop at the key tile holding their last query.
2. ``row_dot``: ``D[b, i] = sum_c do[b, i, c] * o[b, i, c]``, one thread per row: the
   softmax backward's row term, before any tile.
3. ``backward_dk_dv``: one block per tile of T keys, one thread per key; it walks over the
   query tiles (Q, dO, lse and D tiles in shared memory) and accumulates its key's ``dk``
   and ``dv`` in local memory: ``p = exp(s - lse_i)``, ``dv += p do_i``,
   ``ds = p (do_i . v_j - D_i)``, ``dk += ds q_i / sqrt(d)``. Causal blocks start at the
   query tile holding their first key.
4. ``backward_dq``: one block per tile of T queries, one thread per query, walking over
   the K/V tiles: ``dq += ds k_j / sqrt(d)`` with the same ``p`` and ``ds``. Two passes over
   the pairs instead of atomic adds into ``dq``: deterministic, and no float64 atomics.

Memory: O(N d) for inputs and outputs, plus N for lse and D; shared memory per block is
at most 6 T (d + 1) + 2 T elements (the dk/dv pass; T = 16 and d = 64 in float32: 24.5 KiB;
``default_tile`` picks T so that it fits the 48 KiB every device allows). Work: the forward computes each
score once; the backward twice (once per pass), against once for a backward that could
keep P: the price of not storing it.

Run it: tests run it under the simulator (``NUMBA_ENABLE_CUDASIM=1``, set by
``tests/conftest.py``); with a GPU, ``BACKPROP_TRAPS_REAL_GPU=1 pytest tests/kernels``.

Shapes: B heads, N tokens, D features per head (``d`` in the notebook); T = tile rows =
threads per block. q, k, v, o, do, dq, dk, dv are (B, N, D); lse and D are (B, N). The
math is done in the inputs' dtype (float32 or float64).

Check and time it: python -m backprop_traps.kernels.attention_backward (from any folder) runs these kernels on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.attention_backward: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import functools
import math

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda

SHARED_BYTES = 48 * 1024  # static shared memory per block that every CUDA device allows
ROW_THREADS = 128


def default_tile(d: int, dtype) -> int:
    """The largest of 64, 32, 16, 8 whose shared arrays fit in SHARED_BYTES: the dk/dv pass,
    the largest, holds six (T, D + 1) arrays (two tiles, the block's own K and V rows and
    their two accumulators) and two (T,) rows of lse and D."""
    for tile in (64, 32, 16, 8):
        if (6 * tile * (d + 1) + 2 * tile) * np.dtype(dtype).itemsize <= SHARED_BYTES:
            return tile
    raise ValueError(f"d = {d} is too large for the shared arrays of 8 rows")


def bounded_jit(bounds):
    """cuda.jit with ptxas's launch bounds; the simulator's jit takes no such option."""
    from numba.core import config
    return cuda.jit if config.ENABLE_CUDASIM else cuda.jit(launch_bounds=bounds)


@cuda.jit(device=True)
def head_and_first_row(N, T):
    """(head b, first row of the block's tile). The grid is 1-D, B * ceil(N / T) blocks, head
    0's tiles first: heads along grid y would stop at CUDA's 65,535 (a batch of 4,096 x 16
    heads is past it), grid x takes 2**31 - 1."""
    tiles = (N + T - 1) // T
    return cuda.blockIdx.x // tiles, (cuda.blockIdx.x % tiles) * T


@functools.lru_cache(maxsize=None)
def _kernels(tile: int, d: int, dtype: np.dtype):
    """The three tiled kernels, compiled per (T, D, dtype): shared arrays need all three at
    compile time.

    Each thread owns one row (a query or a key), but keeps it, and what it accumulates, in
    shared memory, in rows of D + 1 elements: thread t's element c sits D + 1 words after
    thread t - 1's, so the T threads reading their own column c hit T different banks, and
    no thread holds 2-4 arrays of D in registers (at d = 64 that was 255 registers and
    kilobytes of spills, benchmarks/results/kernels_static.md). Tiles of K, V, Q, dO are loaded by consecutive threads on
    consecutive columns (coalesced reads, conflict-free writes) and read by all threads at
    once (one address: a broadcast)."""
    T, D, P = tile, d, d + 1                 # P: a padded row, a compile-time constant
    # At most 128 registers a thread (REGISTER_BOUND in benchmarks/kernels_static.py): ptxas is
    # told that 512 threads' worth of whole warps must fit on an SM (64K registers); small d,
    # fully unrolled, took 181 without it.
    bounds = (T, max(1, 512 // (32 * math.ceil(T / 32))))
    st = numba.from_dtype(dtype)
    zero, neg_inf = dtype.type(0), dtype.type(-np.inf)

    @cuda.jit(device=True)
    def load_tile(tile_, src, b, r0, N, t):
        """tile_[r, c] = src[b, r0 + r, c] (zero past N), consecutive threads on consecutive c."""
        for e in range(t, T * D, T):
            r, c = e // D, e % D
            tile_[r, c] = src[b, r0 + r, c] if r0 + r < N else zero

    # 1. forward: online softmax over key tiles, K/V tiles in shared memory
    @bounded_jit(bounds)
    def forward(q, k, v, scale, causal, o, lse):
        N = q.shape[1]
        b, first = head_and_first_row(N, T)  # the block's head and its first query
        t = cuda.threadIdx.x
        i = first + t                        # this thread's query
        active = i < N
        k_tile = cuda.shared.array((T, D), st)
        v_tile = cuda.shared.array((T, D), st)
        q_own = cuda.shared.array((T, P), st)    # q_i / sqrt(d): the scores are then plain dots
        acc = cuda.shared.array((T, P), st)      # sum_j exp(s_j - m) v_j
        for c in range(D):
            q_own[t, c] = q[b, i, c] * scale if active else zero
            acc[t, c] = zero
        m, l = neg_inf, zero
        stop = min(N, first + T) if causal else N  # causal: no key after the block's last query
        for j0 in range(0, stop, T):
            load_tile(k_tile, k, b, j0, N, t)
            load_tile(v_tile, v, b, j0, N, t)
            cuda.syncthreads()
            if active:
                for jj in range(min(T, N - j0)):
                    if causal and j0 + jj > i:
                        break
                    s = zero
                    for c in range(D):
                        s += q_own[t, c] * k_tile[jj, c]
                    if s > m:                # a new max: move l and acc onto it (exp(-inf) = 0)
                        alpha = math.exp(m - s)
                        l *= alpha
                        for c in range(D):
                            acc[t, c] *= alpha
                        m = s
                    p = math.exp(s - m)      # <= 1
                    l += p
                    for c in range(D):
                        acc[t, c] += p * v_tile[jj, c]
            cuda.syncthreads()               # the tile is read by all before it is replaced
        if active:
            for c in range(D):
                o[b, i, c] = acc[t, c] / l
            lse[b, i] = m + math.log(l)

    # 3. backward, pass over keys: dk and dv of one key per thread, Q/dO tiles in shared memory
    @bounded_jit(bounds)
    def backward_dk_dv(do, q, k, v, lse, rowdot, scale, causal, dk, dv):
        N = q.shape[1]
        b, first = head_and_first_row(N, T)  # the block's head and its first key
        t = cuda.threadIdx.x
        j = first + t                        # this thread's key
        active = j < N
        q_tile = cuda.shared.array((T, D), st)
        do_tile = cuda.shared.array((T, D), st)
        lse_tile = cuda.shared.array(T, st)
        d_tile = cuda.shared.array(T, st)
        k_own = cuda.shared.array((T, P), st)
        v_own = cuda.shared.array((T, P), st)
        dk_acc = cuda.shared.array((T, P), st)
        dv_acc = cuda.shared.array((T, P), st)
        for c in range(D):
            k_own[t, c] = k[b, j, c] * scale if active else zero
            v_own[t, c] = v[b, j, c] if active else zero
            dk_acc[t, c] = zero
            dv_acc[t, c] = zero
        for i0 in range(first if causal else 0, N, T):  # causal: no query before the first key
            i = i0 + t
            load_tile(q_tile, q, b, i0, N, t)
            load_tile(do_tile, do, b, i0, N, t)
            lse_tile[t] = lse[b, i] if i < N else zero
            d_tile[t] = rowdot[b, i] if i < N else zero
            cuda.syncthreads()
            if active:
                for ii in range(min(T, N - i0)):
                    if causal and j > i0 + ii:
                        continue
                    s = zero
                    dp = zero
                    for c in range(D):
                        s += q_tile[ii, c] * k_own[t, c]
                        dp += do_tile[ii, c] * v_own[t, c]
                    p = math.exp(s - lse_tile[ii])     # the exact probability, never > 1
                    ds = p * (dp - d_tile[ii])
                    for c in range(D):
                        dv_acc[t, c] += p * do_tile[ii, c]
                        dk_acc[t, c] += ds * q_tile[ii, c]
            cuda.syncthreads()
        if active:
            for c in range(D):
                dk[b, j, c] = dk_acc[t, c] * scale
                dv[b, j, c] = dv_acc[t, c]

    # 4. backward, pass over queries: dq of one query per thread, K/V tiles in shared memory
    @bounded_jit(bounds)
    def backward_dq(do, q, k, v, lse, rowdot, scale, causal, dq):
        N = q.shape[1]
        b, first = head_and_first_row(N, T)
        t = cuda.threadIdx.x
        i = first + t
        active = i < N
        k_tile = cuda.shared.array((T, D), st)
        v_tile = cuda.shared.array((T, D), st)
        q_own = cuda.shared.array((T, P), st)
        do_own = cuda.shared.array((T, P), st)
        dq_acc = cuda.shared.array((T, P), st)
        for c in range(D):
            q_own[t, c] = q[b, i, c] * scale if active else zero
            do_own[t, c] = do[b, i, c] if active else zero
            dq_acc[t, c] = zero
        lse_i = lse[b, i] if active else zero
        d_i = rowdot[b, i] if active else zero
        stop = min(N, first + T) if causal else N
        for j0 in range(0, stop, T):
            load_tile(k_tile, k, b, j0, N, t)
            load_tile(v_tile, v, b, j0, N, t)
            cuda.syncthreads()
            if active:
                for jj in range(min(T, N - j0)):
                    if causal and j0 + jj > i:
                        break
                    s = zero
                    dp = zero
                    for c in range(D):
                        s += q_own[t, c] * k_tile[jj, c]
                        dp += do_own[t, c] * v_tile[jj, c]
                    ds = math.exp(s - lse_i) * (dp - d_i)
                    for c in range(D):
                        dq_acc[t, c] += ds * k_tile[jj, c]
            cuda.syncthreads()
        if active:
            for c in range(D):
                dq[b, i, c] = dq_acc[t, c] * scale

    return forward, backward_dk_dv, backward_dq


# 2. the row term of the softmax backward, one thread per row
@cuda.jit
def row_dot(do, o, out):
    r = cuda.grid(1)
    B, N, D = do.shape
    if r < B * N:
        b, i = r // N, r % N
        acc = do[b, i, 0] * o[b, i, 0]
        for c in range(1, D):
            acc += do[b, i, c] * o[b, i, c]
        out[b, i] = acc


# -- launchers on device arrays (what the benchmark times), then numpy in, numpy out -------
def _grid(B, N, tile):
    """(grid, block) of the tiled kernels: one block per tile of one head, all in grid x."""
    return max(1, B * math.ceil(N / tile)), tile


def forward_device(d_q, d_k, d_v, causal, d_o, d_lse, tile=None):
    """Launch the forward on device arrays: writes ``d_o (B, N, D)`` and ``d_lse (B, N)``."""
    B, N, D = d_q.shape
    dtype = np.dtype(d_q.dtype)
    tile = tile or default_tile(D, dtype)
    forward, _, _ = _kernels(tile, D, dtype)
    grid, block = _grid(B, N, tile)
    forward[grid, block](d_q, d_k, d_v, dtype.type(1 / math.sqrt(D)), bool(causal), d_o, d_lse)


def backward_device(d_do, d_q, d_k, d_v, d_o, d_lse, causal, d_rowdot, d_dq, d_dk, d_dv, tile=None):
    """Launch the backward on device arrays: ``d_rowdot (B, N)`` is scratch for D; writes
    ``d_dq``, ``d_dk``, ``d_dv``."""
    B, N, D = d_q.shape
    dtype = np.dtype(d_q.dtype)
    tile = tile or default_tile(D, dtype)
    _, dk_dv, dq = _kernels(tile, D, dtype)
    row_dot[max(1, math.ceil(B * N / ROW_THREADS)), ROW_THREADS](d_do, d_o, d_rowdot)
    grid, block = _grid(B, N, tile)
    scale = dtype.type(1 / math.sqrt(D))
    dk_dv[grid, block](d_do, d_q, d_k, d_v, d_lse, d_rowdot, scale, bool(causal), d_dk, d_dv)
    dq[grid, block](d_do, d_q, d_k, d_v, d_lse, d_rowdot, scale, bool(causal), d_dq)


def attention_forward(q, k, v, causal, tile=None):
    """numpy in, numpy out, as in docs/questions/attention_backward.md: ``(o, lse)``."""
    arrays = [cuda.to_device(np.ascontiguousarray(a)) for a in (q, k, v)]
    B, N, D = q.shape
    d_o = cuda.device_array((B, N, D), dtype=q.dtype)
    d_lse = cuda.device_array((B, N), dtype=q.dtype)
    if N:
        forward_device(*arrays, causal, d_o, d_lse, tile)
    return d_o.copy_to_host(), d_lse.copy_to_host()


def attention_backward(do, q, k, v, o, lse, causal, tile=None):
    """numpy in, numpy out: ``(dq, dk, dv)``, each (B, N, D)."""
    arrays = [cuda.to_device(np.ascontiguousarray(a, dtype=q.dtype)) for a in (do, q, k, v, o, lse)]
    B, N, D = q.shape
    d_rowdot = cuda.device_array((B, N), dtype=q.dtype)
    grads = [cuda.device_array((B, N, D), dtype=q.dtype) for _ in range(3)]
    if N:
        backward_device(*arrays[:6], causal, d_rowdot, *grads, tile)
    return tuple(g.copy_to_host() for g in grads)


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("attention_backward"))
