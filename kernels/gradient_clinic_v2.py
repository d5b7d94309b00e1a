"""The clinic's per-layer measurements, Numba CUDA, version 2: gradient, update and weight
norms in one pass, and the dead-ReLU count, made fast (issue 34).

Version 1 (kernels/gradient_clinic.py) is the one to read first: the same three kernels with
64-thread blocks reading one value a load and a shared-memory tree, and one thread a unit
walking all N rows for the dead count. What changed is said below, kernel by kernel; the host
functions are version 1's (these launchers run under them).

The plan of llm.c's dev/cuda/*.cu files: a CPU reference (the solution notebook's
``update_ratios`` and ``dead_relu_fraction``), numbered kernels, and a launcher that validates
them against the reference and times them. A training loop logs these every step, so they
must cost one read of each tensor and give the same bits every run.

1. ``norm_partials_kernel``: G blocks of 256 threads stride over one layer's flattened gradient,
   weight before and weight after, four neighbours a thread in 128-bit loads (the last P % 4
   values one at a time); each thread keeps three running sums of squares (gradient, update =
   after - before, weight) in float64, the block adds them by warp shuffles (kernels/common/patterns.py)
   and thread 0 writes the block's three sums to its own row of ``partials`` (G, 3). One read of
   each tensor, no update tensor ever stored.
2. ``norm_finish_kernel``: three threads, one per sum, add the G rows in a fixed order and take
   the square root. No atomics anywhere: the norms are bit-identical on every run (llm.c's
   global-norm kernel for gradient clipping does the same per-block then finish).
3. ``dead_units_kernel`` then ``dead_finish_kernel``: a unit (column of z) is dead when every
   one of its N pre-activations is <= 0. The rows are split into P parts: thread (j, l) of part
   p walks rows l, l + 8, ... of the part in column j (a warp reads 32 neighbouring columns of
   a row) and stops at the first positive value; the block's 8 lanes meet in shared memory and
   write alive[p, j]. Then one thread a unit ORs its P flags. Version 1 gave each unit one
   thread walking all N rows: 8,192 threads at LARGE, 2% of bandwidth (issue 34).

Indices are unsigned offsets into flat arrays (kernels/common/patterns.py). What the static table
predicts (benchmarks/results/kernels_static.md): 128-bit loads in the norms' loop, no 64-bit
division, and enough threads to fill a GPU.

There is no backward: these kernels measure a step, they are not part of a differentiable op.
The ratios (update norm over weight norm, 0 for no update, inf for a zero weight that moved)
are three divisions per layer, done on the host.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_gradient_clinic_kernels.py
Check and time both versions: ``python -m backprop_traps.kernels.gradient_clinic`` (the
benchmark's tiny cases, kernels/runtime/self_check.py).

Shapes: one layer's W (D_in, D_out), flattened to P values; G blocks of TPB threads;
z (N, D) per layer, its rows in PARTS parts; alive (PARTS, D) uint8. Inputs float32 or
float64; the sums of squares in float64.
"""
from __future__ import annotations

import math
import sys

import numba

from backprop_traps.kernels import gradient_clinic as v1
from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import VECTOR, WARP, aligned, block_sum, load4, u64

THREADS_PER_BLOCK = 256  # whole warps: the block sum is by warp shuffles
MAX_BLOCKS = 1024        # G: 8 resident blocks on each of 132 multiprocessors, about
COLUMNS, LANES = 32, 8   # kernel 3's block: 32 units by 8 lanes of rows
TARGET_THREADS = 1 << 19  # kernel 3's threads: enough to fill a GPU


# 1. three sums of squares per block ------------------------------------------------------------
@cuda.jit(device=True)
def square(v):
    """v * v in float64, whatever v's float type."""
    return float(v) * float(v)


@cuda.jit
def norm_partials_kernel(grad, before, after, size, partials):
    # grad, before, after: P (one layer, flattened); size: P as u64; partials: G, 3 (written:
    # this block's sums of grad^2, (after - before)^2, before^2)
    tid = cuda.threadIdx.x
    shared = cuda.shared.array(WARP, numba.float64)
    g2, u2, w2 = 0.0, 0.0, 0.0
    stride = u64(cuda.gridsize(1)) * u64(VECTOR)
    i = u64(cuda.grid(1)) * u64(VECTOR)
    body = size - size % u64(VECTOR)                      # 4 at a time up to here
    while i < body:
        g0, g1, g2_, g3 = load4(grad, i)
        b0, b1, b2, b3 = load4(before, i)
        a0, a1, a2, a3 = load4(after, i)
        g2 += square(g0) + square(g1) + square(g2_) + square(g3)
        u2 += square(a0 - b0) + square(a1 - b1) + square(a2 - b2) + square(a3 - b3)
        w2 += square(b0) + square(b1) + square(b2) + square(b3)
        i += stride
    i = body + u64(cuda.grid(1))
    if i < size:                                          # the last P % 4, one a thread
        g2 += square(grad[i])
        u2 += square(after[i] - before[i])
        w2 += square(before[i])
    g2 = block_sum(shared, g2, 0.0, tid, THREADS_PER_BLOCK)
    u2 = block_sum(shared, u2, 0.0, tid, THREADS_PER_BLOCK)
    w2 = block_sum(shared, w2, 0.0, tid, THREADS_PER_BLOCK)
    if tid == 0:
        partials[cuda.blockIdx.x, 0], partials[cuda.blockIdx.x, 1], partials[cuda.blockIdx.x, 2] = g2, u2, w2


# 2. the blocks' sums, in a fixed order ----------------------------------------------------------
@cuda.jit
def norm_finish_kernel(partials, norms):
    # partials: G, 3; norms: 3 (written: the gradient's, the update's and the weight's norm)
    q = cuda.grid(1)
    if q < 3:
        total = 0.0
        for b in range(partials.shape[0]):
            total += partials[b, q]
        norms[q] = math.sqrt(total)


# 3. dead units: rows in parts, then the parts' flags ------------------------------------------------
@cuda.jit
def dead_units_kernel(z, n_rows, d, rows_per_part, alive):
    # z: N*D (flat); n_rows, d, rows_per_part: u64; alive: PARTS*D uint8 (written: 1 when unit j
    # has a positive value among part p's rows). Grid (D / 32, PARTS), block (32, 8).
    tx, lane = cuda.threadIdx.x, cuda.threadIdx.y
    j = u64(cuda.blockIdx.x * COLUMNS + tx)
    p = u64(cuda.blockIdx.y)
    seen = cuda.shared.array((LANES, COLUMNS), numba.uint8)
    found = 0
    if j < d:
        i = p * rows_per_part + u64(lane)
        stop = min(p * rows_per_part + rows_per_part, n_rows)
        while i < stop:
            if z[i * d + j] > 0:
                found = 1
                break                                     # the first positive value settles it
            i += u64(LANES)
    seen[lane, tx] = found
    cuda.syncthreads()
    if lane == 0 and j < d:
        for other in range(1, LANES):
            found |= seen[other, tx]
        alive[p * d + j] = found


@cuda.jit
def dead_finish_kernel(alive, parts, d, dead):
    # alive: PARTS*D uint8; parts, d: u64; dead: D int32 (written: 1 when no part saw a positive)
    j = u64(cuda.grid(1))
    if j < d:
        any_part = 0
        for p in range(parts):
            any_part |= alive[p * d + j]
        dead[j] = 1 - any_part


# launchers: device arrays in, launched -------------------------------------------------------------
def norm_blocks(n: int) -> int:
    """G, kernel 1's blocks (they stride over the rest): at most MAX_BLOCKS."""
    return max(1, min(MAX_BLOCKS, math.ceil(n / (THREADS_PER_BLOCK * VECTOR))))


def norms_device(d_grad, d_before, d_after, d_partials, d_norms):
    """Kernels 1 and 2 on flat device arrays (P,): d_norms (3,) through d_partials (G, 3)."""
    if not aligned(d_grad, d_before, d_after):
        raise ValueError("the norms read 4 values at a time: the arrays must start on a 16-byte boundary")
    norm_partials_kernel[d_partials.shape[0], THREADS_PER_BLOCK](d_grad, d_before, d_after, u64(d_grad.size),
                                                                 d_partials)
    norm_finish_kernel[1, 32](d_partials, d_norms)


def dead_parts(n_rows: int, d: int) -> int:
    """PARTS, the row parts of kernel 3: about TARGET_THREADS threads, at least 4 rows a lane."""
    per_part = COLUMNS * LANES * math.ceil(d / COLUMNS)
    return max(1, min(math.ceil(TARGET_THREADS / per_part), math.ceil(n_rows / (4 * LANES)), MAX_GRID[1]))


def dead_units_device(d_z, d_dead, d_alive):
    """Kernel 3: d_dead (D,) int32 from d_z (N, D), through d_alive (PARTS, D) uint8 (``dead_parts``)."""
    (n, d), parts = d_z.shape, d_alive.shape[0]
    dead_units_kernel[(max(1, math.ceil(d / COLUMNS)), parts), (COLUMNS, LANES)](
        d_z.reshape(d_z.size), u64(n), u64(d), u64(math.ceil(n / parts)), d_alive.reshape(d_alive.size))
    dead_finish_kernel[max(1, math.ceil(d / 128)), 128](d_alive.reshape(d_alive.size), u64(parts), u64(d), d_dead)


# host functions: version 1's, on these launchers --------------------------------------------------
def layer_norms(grad, before, after, blocks=None):
    return v1.layer_norms(grad, before, after, blocks, launchers=sys.modules[__name__])


def update_ratios(params_before, params_after, grads, blocks=None):
    return v1.update_ratios(params_before, params_after, grads, blocks, launchers=sys.modules[__name__])


def dead_relu_fraction(pre_acts):
    return v1.dead_relu_fraction(pre_acts, launchers=sys.modules[__name__])
