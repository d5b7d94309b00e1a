"""An Elman RNN through time, Numba CUDA, version 2: version 1's kernels with a fast
global-norm clipping (issue 34).

Version 1 (kernels/bptt.py) is the one to read first: the forward a launch per step, the
reversed backward with truncation, one kernel for every step's weight gradients (kernels 1
to 3, imported from there unchanged), and the clipping (kernel 4) as 4 blocks of 128 threads
summing squares one entry a thread into a shared-memory tree, then a thread per entry scaling.
Issue 34 found those 4 blocks far too few to fill a GPU. What changed, in kernel 4 only:

  - the sum of squares and the scale read 4 entries a thread in 128-bit loads
    (kernels/common/patterns.py's load4/store4) over while-loop grid strides of unsigned
    offsets, no division; the last M % 4 one at a time;
  - enough blocks to fill a GPU (``reduce_blocks``: up to 1,024 of 256 threads), each summed
    with warp shuffles (``block_sum``), not a shared-memory tree;
  - the scale's grid is capped (SCALE_BLOCKS) and strides over the rest.

The host still adds the partials of every tensor in a fixed order, so the norm is the same
bits every run. The arrays must start on a 16-byte boundary (the launchers check). The host
functions are version 1's, run on these launchers.

Run the tests (both versions) under the simulator (no GPU needed), on a GPU with
BACKPROP_TRAPS_REAL_GPU=1: NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_bptt_kernels.py
Check and time both versions: python -m backprop_traps.kernels.bptt (kernels/cases/bptt.py's
tiny cases, kernels/runtime/self_check.py).

Shapes: T steps, N sequences, D inputs, H hidden units, M entries of one gradient tensor.
"""
from __future__ import annotations

import math
import sys

from backprop_traps.kernels import bptt as v1
from backprop_traps.kernels.bptt import (rnn_backward, rnn_forward, step_backward_device,  # noqa: F401  (unchanged)
                                         step_forward_device, weight_grads_device)
from backprop_traps.kernels.common.patterns import VECTOR, WARP, aligned, block_sum, load4, store4, u64
from backprop_traps.kernels.runtime.device import cuda

REDUCE_THREADS = 256
REDUCE_BLOCKS = 1024  # at most, blocks of the sum of squares: partial sums the host adds in a fixed order
SCALE_BLOCKS = 132 * 16  # the scale's grid-stride grid: a GPU full, twice


# 4. global-norm clipping: 4 entries a thread in 128-bit loads, while-loop grid strides -------------
@cuda.jit
def sum_squares_kernel(g, size, partials):
    # g: flat (M,); size: M as u64; partials: one per block (written): warp shuffles, then the warps
    shared = cuda.shared.array(WARP, g.dtype)
    zero = g.dtype.type(0)
    acc = zero
    i, stride = u64(cuda.grid(1)) * u64(VECTOR), u64(cuda.gridsize(1)) * u64(VECTOR)
    body = size - size % u64(VECTOR)
    while i < body:
        a, b, c, d = load4(g, i)
        acc += a * a + b * b + c * c + d * d
        i += stride
    i = body + u64(cuda.grid(1))
    if i < size:                                          # the last M % 4
        acc += g[i] * g[i]
    total = block_sum(shared, acc, zero, cuda.threadIdx.x, REDUCE_THREADS)
    if cuda.threadIdx.x == 0:
        partials[cuda.blockIdx.x] = total


@cuda.jit
def scale_kernel(g, size, factor, out):
    # g, out: flat (M,); size: M as u64; out = g * factor
    i, stride = u64(cuda.grid(1)) * u64(VECTOR), u64(cuda.gridsize(1)) * u64(VECTOR)
    body = size - size % u64(VECTOR)
    while i < body:
        a, b, c, d = load4(g, i)
        store4(out, i, a * factor, b * factor, c * factor, d * factor)
        i += stride
    i = body + u64(cuda.grid(1))
    if i < size:
        out[i] = g[i] * factor


# launchers: device arrays in, launched ---------------------------------------------------------
def reduce_blocks(size: int) -> int:
    """Kernel 4a's blocks for M entries: 4 a thread, at most REDUCE_BLOCKS (they stride on)."""
    return max(1, min(REDUCE_BLOCKS, math.ceil(size / (VECTOR * REDUCE_THREADS))))


def _check(*arrays):
    if not aligned(*arrays):
        raise ValueError("the clipping kernels read 4 entries a load: the arrays must start on a 16-byte boundary")


def sum_squares_device(d_g, d_partials):
    """Kernel 4a: one partial sum of squares per block (d_partials.size blocks, grid-stride)."""
    _check(d_g)
    sum_squares_kernel[d_partials.size, REDUCE_THREADS](d_g, u64(d_g.size), d_partials)


def scale_device(d_g, factor, d_out):
    """Kernel 4b: d_out = d_g * factor, 4 entries a thread at a time."""
    _check(d_g, d_out)
    blocks = max(1, min(math.ceil(d_g.size / (VECTOR * REDUCE_THREADS)), SCALE_BLOCKS))
    scale_kernel[blocks, REDUCE_THREADS](d_g, u64(d_g.size), d_g.dtype.type(factor), d_out)


# host functions: version 1's, on these launchers --------------------------------------------------
def clip_grad_norm(grads, max_norm, blocks=None):
    """(clipped, total_norm) as the solution's ``clip_grad_norm``; ``blocks``: kernel 4a's
    (default ``reduce_blocks``)."""
    return v1.clip_grad_norm(grads, max_norm, blocks, launchers=sys.modules[__name__])
