"""Question 25's embedding lookup in Numba CUDA: the forward, and its backward as a scatter of
rows into a table of V rows, two ways, dense and sparse.

The backward's writes collide: every position holding the same id adds into the same row, the
routing trap of max pooling again, at vocabulary scale. A plain ``dW[v] += g`` from many threads
loses updates. The two fixes:

1. ``embedding_forward_kernel``: out[p, d] = W[ids[p], d], zero at a padding position (a gather:
   no two threads write one place).
2. ``embedding_backward_atomic_kernel``: one thread per (position, feature) does
   ``cuda.atomic.add`` into dW[ids[p], d] (zeroed first), skipping padding. Simple and right,
   but the adds land in a different order on every run, so float sums are not bit-reproducible,
   a frequent token's row serialises its threads, and float64 atomicAdd needs compute
   capability 6.0 or newer.
3. ``segment_sum_kernel``: sort and segment. The positions are sorted by id (stable), the
   segments of equal ids found (``segments``), and one thread per (segment, feature) sums its
   segment in a fixed order and writes its row once: deterministic, no atomics (PyTorch's CUDA
   embedding backward does this). The same kernel writes the dense dW (row ``unique_ids[s]``,
   the rest zeroed first) or the sparse rows (row s): the sparse form never touches V.

The sort runs on the host here (``segments``: numpy's argsort), as Numba has no device sort; on
a GPU a radix sort (CUB, ``torch.sort``) does it, and the benchmark times the kernels on
segments made beforehand.

Shape letters: P = B * T positions, V rows, D features, S distinct ids other than padding.
Every array is flat inside the kernels; ``pad`` is padding_idx, or -1 for None. Each kernel
gives a block to a row (a position, or a segment) and its threads to the row's features: the id
is read once per block, the features are read and written by consecutive threads (coalesced),
and no thread divides an index (a flat index e // D is a 64-bit division per element). Indices
are unsigned 64-bit (``_u``) once they are known to be ids, so Numba drops its negative-index
check.

The launchers (``*_device``) take C-ordered device arrays and only launch: the benchmark times
them and kernels/runtime/dry_run.py checks their grids at any size. The host functions at the bottom
take and return numpy arrays, with the solution notebook's arguments and results.
Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_embedding_backward_kernels.py
Check and time it: python -m backprop_traps.kernels.embedding_backward (from any folder)
(kernels/runtime/self_check.py; the simulator without a GPU).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.embedding_backward: no GPU? the simulator
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda

THREADS_PER_BLOCK = 256  # at most; a row of D features takes D rounded up to a warp, up to this
MAX_BLOCKS = 4096  # a grid-stride loop over rows covers the rest: far under the 2^31 - 1 blocks of grid x


def launch_config(rows: int, D: int):
    """(blocks, threads): a block per row (grid-stride beyond MAX_BLOCKS rows), its threads
    across the row's D features (a stride loop beyond THREADS_PER_BLOCK). No thread divides
    an index: the row is the block's, the feature the thread's."""
    return max(1, min(MAX_BLOCKS, rows)), min(THREADS_PER_BLOCK, 32 * max(1, math.ceil(D / 32)))


@cuda.jit(device=True)
def _u(i):
    return numba.uint64(i)


# 1. the forward: a gather ------------------------------------------------------------------------
@cuda.jit
def embedding_forward_kernel(W, ids, pad, D, zero, out):
    # W: V*D; ids: P (int64); pad: padding_idx or -1; out: P*D (written); a block per position
    Du = _u(D)
    p = _u(cuda.blockIdx.x)
    while p < _u(ids.size):
        v = ids[p]  # one id per block: the row it copies
        d = _u(cuda.threadIdx.x)
        while d < Du:  # whiles, not ranges: no trip count, so no 64-bit division
            if v == pad:
                out[p * Du + d] = zero  # the padding row is held at zero
            else:
                out[p * Du + d] = W[_u(v) * Du + d]
            d += _u(cuda.blockDim.x)
        p += _u(cuda.gridDim.x)


# 2. the backward with atomics: a scatter ---------------------------------------------------------
@cuda.jit
def embedding_backward_atomic_kernel(dout, ids, pad, D, dW):
    # dout: P*D; ids: P; dW: V*D, zeroed before the launch, added into; a block per position
    Du = _u(D)
    p = _u(cuda.blockIdx.x)
    while p < _u(ids.size):
        v = ids[p]
        if v != pad:  # a constant output: no gradient for the padding row
            d = _u(cuda.threadIdx.x)
            while d < Du:
                cuda.atomic.add(dW, _u(v) * Du + d, dout[p * Du + d])  # repeated ids collide here
                d += _u(cuda.blockDim.x)
        p += _u(cuda.gridDim.x)


# 3. the backward by sorted segments: one writer per row ------------------------------------------
@cuda.jit
def segment_sum_kernel(dout, order, starts, targets, D, zero, out):
    # dout: P*D; order: the non-padding positions sorted by id; starts: S + 1, segment s is
    # order[starts[s]:starts[s + 1]]; targets: S, the row segment s writes; out: rows*D (written);
    # a block per segment
    Du = _u(D)
    s = _u(cuda.blockIdx.x)
    while s < _u(targets.size):
        row = _u(targets[s]) * Du
        d = _u(cuda.threadIdx.x)
        while d < Du:
            acc = zero
            j, end = _u(starts[s]), _u(starts[s + 1])
            while j < end:  # in a fixed order: the same bits every run
                acc += dout[_u(order[j]) * Du + d]
                j += _u(1)
            out[row + d] = acc
            d += _u(cuda.blockDim.x)
        s += _u(cuda.gridDim.x)


# launchers: device arrays in, launched ----------------------------------------------------------
def _features(a) -> int:
    """D, the last axis (the simulator's device shapes take no negative index)."""
    return int(a.shape[len(a.shape) - 1])


def _pad(padding_idx) -> np.int64:
    return np.int64(-1 if padding_idx is None else padding_idx)


def embedding_forward_device(d_W, d_ids, padding_idx, d_out):
    """Kernel 1: d_out (P, D) = W[ids], zero at padding positions."""
    D = _features(d_W)
    embedding_forward_kernel[launch_config(d_ids.size, D)](d_W.ravel(), d_ids.ravel(), _pad(padding_idx), np.int64(D),
                                                        d_W.dtype.type(0), d_out.ravel())


def embedding_backward_atomic_device(d_dout, d_ids, padding_idx, d_dW):
    """Kernel 2: adds every non-padding position's gradient into d_dW (zero it first)."""
    D = _features(d_dout)
    embedding_backward_atomic_kernel[launch_config(d_ids.size, D)](d_dout.ravel(), d_ids.ravel(), _pad(padding_idx),
                                                                 np.int64(D), d_dW.ravel())


def segment_sum_device(d_dout, d_order, d_starts, d_targets, d_out):
    """Kernel 3: row targets[s] of d_out = the sum of segment s's gradients (for the dense form,
    zero d_out first)."""
    D = _features(d_dout)
    segment_sum_kernel[launch_config(d_targets.size, D)](d_dout.ravel(), d_order, d_starts, d_targets,
                                                          np.int64(D), d_dout.dtype.type(0), d_out.ravel())


# host functions: numpy in, numpy out --------------------------------------------------------------
def segments(ids, padding_idx):
    """(order, starts, unique_ids): the non-padding positions sorted by id (stable), where each
    id's segment starts (S + 1 entries), and the S distinct ids. The GPU's radix sort, on the host."""
    flat = np.asarray(ids, dtype=np.int64).ravel()
    kept = np.flatnonzero(flat != _pad(padding_idx)).astype(np.int64)
    order = kept[np.argsort(flat[kept], kind="stable")]
    sorted_ids = flat[order]
    first = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]) if len(order) else np.zeros(0, np.int64)
    starts = np.r_[first, len(order)].astype(np.int64)
    return order, starts, sorted_ids[first].astype(np.int64)


def _zeros(shape, dtype):
    return cuda.to_device(np.zeros(shape, dtype=dtype))


def embedding_forward(W, ids, padding_idx):
    """out (B, T, D) from W (V, D), ids (B, T)."""
    W = np.ascontiguousarray(W)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    d_out = cuda.device_array(ids.shape + (W.shape[1],), dtype=W.dtype)
    embedding_forward_device(cuda.to_device(W), cuda.to_device(ids), padding_idx, d_out)
    return d_out.copy_to_host()


def embedding_backward(dout, ids, V, padding_idx, method="sorted"):
    """dW (V, D): ``method`` "atomic" (kernel 2) or "sorted" (kernel 3, deterministic)."""
    dout = np.ascontiguousarray(dout)
    D = dout.shape[-1]
    d_dout, d_dW = cuda.to_device(dout.reshape(-1, D)), _zeros((V, D), dout.dtype)
    if method == "atomic":
        embedding_backward_atomic_device(d_dout, cuda.to_device(np.ascontiguousarray(ids, dtype=np.int64)),
                                         padding_idx, d_dW)
    else:
        order, starts, unique_ids = segments(ids, padding_idx)
        if len(unique_ids):
            segment_sum_device(d_dout, cuda.to_device(order), cuda.to_device(starts), cuda.to_device(unique_ids), d_dW)
    return d_dW.copy_to_host()


def embedding_backward_sparse(dout, ids, V, padding_idx):
    """(unique_ids (S,), rows (S, D)): kernel 3 writing row s of a table of S rows, nothing of V."""
    dout = np.ascontiguousarray(dout)
    D = dout.shape[-1]
    order, starts, unique_ids = segments(ids, padding_idx)
    if not len(unique_ids):
        return unique_ids, np.zeros((0, D), dtype=dout.dtype)
    d_rows = cuda.device_array((len(unique_ids), D), dtype=dout.dtype)
    segment_sum_device(cuda.to_device(dout.reshape(-1, D)), cuda.to_device(order), cuda.to_device(starts),
                       cuda.to_device(np.arange(len(unique_ids), dtype=np.int64)), d_rows)
    return unique_ids, d_rows.copy_to_host()


if __name__ == "__main__":
    import sys

    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("embedding_backward"))
