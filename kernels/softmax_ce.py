"""Fused softmax + cross-entropy (forward and backward in one kernel), Numba CUDA.

One block per row (past 2**31 - 1 rows, CUDA's grid limit, each block takes several). Each thread walks its strided share of the row once, keeping an
ONLINE max and sum: a running max ``m`` and a running sum ``s = sum exp(x - m)`` that is
rescaled by ``exp(m_old - m_new)`` whenever the max grows, so no exp ever sees a
positive argument (finite for |logits| ~ 1e4). Warp shuffles, then one shared slot per
warp, merge the threads' ``(m, s)`` pairs into the row's ``logsumexp = m + log(s)``; both
steps are the device helpers of kernels/common/row_reduction.py, shared with
kernels/reparameterisation.py. The row is read through unsigned offsets into the flat
logits (issue 34: no stride arithmetic or negative-index check on a load).
A label outside [0, K): softmax_cross_entropy refuses it (ValueError); launched on device
arrays directly, the kernel makes that row's loss NaN. A second sweep over
the same row writes ``dlogits = (softmax - onehot) / N``; the thread that owns the label's
column also writes the row's loss ``logsumexp - logits[label]``. The host averages the N
per-row losses.

Memory, counting the N*K-sized buffers each approach materialises besides the logits:
- unfused (softmax, then log, then NLL, then backward through each, as an autograd chain
  does): forward keeps ``p`` and ``log p``; backward makes ``dlog p`` (the NLL's one-hot
  gradient), ``dp = dlog p / p`` and finally ``dlogits``: 5 buffers, about 6 N*K in all.
- fused (``inplace=False``): only ``dlogits``: 2 N*K in all, plus N per-row losses.
- fused in place (``inplace=True``): ``dlogits`` overwrites the logits, which the backward
  pass no longer needs: 1 N*K in all. For a language model's head (N = 8192 tokens,
  K = 50257 vocabulary, fp32) one N*K buffer is 1.65 GB, so this saves about 8 GB.
Each element is read twice and written once, whatever the option.

Run it: tests run it under the simulator (``NUMBA_ENABLE_CUDASIM=1``, set by
``tests/conftest.py``); with a GPU, ``BACKPROP_TRAPS_REAL_GPU=1 pytest tests/kernels``.

Shapes: N = rows (batch), K = classes; TPB = threads per block (a power of two).
The math is done in the logits' dtype (float32 or float64).

Check and time it: python -m backprop_traps.kernels.softmax_ce (from any folder) runs these kernels on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.softmax_ce: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import functools
import math

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import i64, u64
from backprop_traps.kernels.common.row_reduction import block_max_sum, online_add

THREADS_PER_BLOCK = 256
MAX_GRID_X = MAX_GRID[0]  # one block per row up to here; past it, blocks take several rows


@functools.lru_cache(maxsize=None)
def _fused_kernel(threads_per_block: int, dtype: np.dtype):
    """Kernel 1, compiled per (TPB, dtype): shared arrays need both at compile time."""
    if threads_per_block < 1 or threads_per_block & (threads_per_block - 1):
        raise ValueError(f"threads_per_block must be a power of two, got {threads_per_block}")
    tpb = threads_per_block
    shared_type = numba.from_dtype(dtype)
    # Constants in the logits' dtype, so float32 math is never promoted to float64.
    zero, one, nan = dtype.type(0), dtype.type(1), dtype.type(np.nan)

    @cuda.jit
    def softmax_ce_fused(logits, labels, n_rows, n_classes, losses, dlogits):
        # logits: N*K (read, flat); labels: N; n_rows: N in the logits' dtype; n_classes: K as
        # u64; losses: N; dlogits: N*K (written; may be the same buffer as logits).
        tid = cuda.threadIdx.x
        shared_m = cuda.shared.array(tpb, shared_type)
        shared_s = cuda.shared.array(tpb, shared_type)
        # One row per block at a time; a grid smaller than N (CUDA's 2**31 - 1 blocks) strides on.
        row = u64(cuda.blockIdx.x)
        while row < u64(labels.size):
            base = row * n_classes                     # the row's first logit: unsigned offsets from here
            # Pass 1: this thread's online (max, sum) over columns tid, tid + TPB, ...
            # It starts from the row's first logit with an empty sum, not from -inf: a thread
            # with no columns (K < TPB) then holds a finite max, and no merge computes
            # exp(-inf - -inf) = nan.
            m = logits[base]
            s = zero
            for j in range(u64(tid), n_classes, u64(tpb)):
                m, s = online_add(m, s, logits[base + j], one)

            # The TPB pairs merged by warp shuffles (kernels/common/row_reduction.py).
            row_max, total = block_max_sum(shared_m, shared_s, m, s, tid, tpb)
            log_sum = math.log(total)

            # Pass 2: each element is read, then (maybe in place) overwritten by the same thread.
            # A label outside [0, K) has no column: its row's loss is NaN (the host refuses such
            # labels before they get here; device callers see the NaN), never stale memory.
            label = labels[row]
            if tid == 0 and (label < 0 or label >= i64(n_classes)):
                losses[row] = nan
            for j in range(u64(tid), n_classes, u64(tpb)):
                shifted = logits[base + j] - row_max
                p = math.exp(shifted - log_sum)
                if i64(j) == label:
                    losses[row] = log_sum - shifted  # -log p[label], from the logit before it is overwritten
                    p -= one
                dlogits[base + j] = p / n_rows
            cuda.syncthreads()  # the shared pairs are read by all before the next row's tree
            row += u64(cuda.gridDim.x)

    return softmax_ce_fused


def fused_device(d_logits, d_labels, d_losses, d_dlogits, threads_per_block=THREADS_PER_BLOCK):
    """Launch kernel 1 on device arrays: writes ``d_losses (N,)`` and ``d_dlogits (N, K)`` (which
    may be ``d_logits``). One block per row, at most 2**31 - 1 blocks (the kernel strides on)."""
    n_rows = d_logits.shape[0]
    dtype = np.dtype(d_logits.dtype)
    kernel = _fused_kernel(threads_per_block, dtype)
    kernel[max(1, min(n_rows, MAX_GRID_X)), threads_per_block](
        d_logits.reshape(d_logits.size), d_labels, dtype.type(n_rows), u64(d_logits.shape[1]), d_losses,
        d_dlogits.reshape(d_dlogits.size))


def softmax_cross_entropy_device(d_logits, d_labels, inplace=False,
                                 threads_per_block=THREADS_PER_BLOCK):
    """Device arrays in, device arrays out: ``(d_losses (N,), d_dlogits (N, K))``.

    With ``inplace=True`` the returned ``d_dlogits`` is ``d_logits`` itself, overwritten.
    """
    n_rows, n_classes = d_logits.shape
    if n_classes < 1:
        raise ValueError("softmax over zero classes is undefined")
    dtype = np.dtype(d_logits.dtype)
    d_losses = cuda.device_array(n_rows, dtype=dtype)
    d_dlogits = d_logits if inplace else cuda.device_array((n_rows, n_classes), dtype=dtype)
    if n_rows:
        fused_device(d_logits, d_labels, d_losses, d_dlogits, threads_per_block)
    return d_losses, d_dlogits


def softmax_cross_entropy(logits, labels, inplace=False, threads_per_block=THREADS_PER_BLOCK):
    """numpy in, numpy out: ``(loss, dlogits)`` as in CONTRACT.md; ``loss`` a Python float.

    ``inplace=True`` overwrites the device copy of the logits (never the caller's array).
    """
    logits = np.ascontiguousarray(logits)  # N, K
    labels = np.ascontiguousarray(labels, dtype=np.int64)  # N
    if labels.size and (labels.min() < 0 or labels.max() >= logits.shape[1]):
        raise ValueError(f"labels must lie in [0, {logits.shape[1]}): got {labels.min()} to {labels.max()}")
    d_losses, d_dlogits = softmax_cross_entropy_device(
        cuda.to_device(logits), cuda.to_device(labels), inplace, threads_per_block)
    return float(d_losses.copy_to_host().mean()), d_dlogits.copy_to_host()


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("softmax_ce"))
