"""The clinic's per-layer measurements, Numba CUDA, version 1: gradient, update and weight
norms in one pass, and the dead-ReLU count.

The plan of llm.c's dev/cuda/*.cu files: a CPU reference (the solution notebook's
``update_ratios`` and ``dead_relu_fraction``), numbered kernels, and a launcher that validates
them against the reference and times them. A training loop logs these every step, so they
must cost one read of each tensor and give the same bits every run.

1. ``norm_partials_kernel``: G blocks stride over one layer's flattened gradient, weight before
   and weight after; each thread keeps three running sums of squares (gradient, update =
   after - before, weight), a shared-memory tree adds the block's threads, and thread 0 writes
   the block's three sums to its own row of ``partials`` (G, 3). One read of each tensor, no
   update tensor ever stored.
2. ``norm_finish_kernel``: three threads, one per sum, add the G rows in a fixed order and take
   the square root. No atomics anywhere: the norms are bit-identical on every run (llm.c's
   global-norm kernel for gradient clipping does the same per-block then finish).
3. ``dead_units_kernel``: one thread per unit (column of z), which is dead when every one of its
   N pre-activations is <= 0; it stops at the first positive one.

This is the version to read first. Version 2 (kernels/gradient_clinic_v2.py) measures the same
faster: issue 34 found kernel 3's one thread a unit (8,192 threads at LARGE) at 2% of copy
bandwidth, and kernel 1's 64-thread blocks reading one value a load. Version 2 reads four
values a thread in 128-bit loads with 1,024 blocks of 256 and warp-shuffle block sums, and
splits z's rows into parts (a flag a part and unit, then one thread a unit ORs them). The
launchers and host functions take the same arguments in both (``dead_parts`` is 1 here: no
scratch flags).

There is no backward: these kernels measure a step, they are not part of a differentiable op.
The ratios (update norm over weight norm, 0 for no update, inf for a zero weight that moved)
are three divisions per layer, done on the host.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_gradient_clinic_kernels.py
Check and time both versions: ``python -m backprop_traps.kernels.gradient_clinic`` runs them on the
benchmark's tiny cases (kernels/cases/gradient_clinic.py) in float64 and float32 against the
solution notebook (kernels/runtime/self_check.py; the simulator without a GPU).

Shapes: one layer's W (D_in, D_out), flattened to P values; G blocks of TPB threads;
z (N, D) per layer. Inputs float32 or float64; the sums of squares in float64.
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.gradient_clinic: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math
import sys

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda

THREADS_PER_BLOCK = 64  # a power of two: the tree halves it
MAX_BLOCKS = 256


# 1. three sums of squares per block ------------------------------------------------------------
@cuda.jit
def norm_partials_kernel(grad, before, after, partials):
    # grad, before, after: P (one layer, flattened); partials: G, 3 (written: this block's sums
    # of grad^2, (after - before)^2, before^2)
    tid = cuda.threadIdx.x
    sums = cuda.shared.array((3, THREADS_PER_BLOCK), numba.float64)
    g2, u2, w2 = 0.0, 0.0, 0.0
    for i in range(cuda.grid(1), grad.size, cuda.gridsize(1)):
        step = after[i] - before[i]
        g2 += grad[i] * grad[i]
        u2 += step * step
        w2 += before[i] * before[i]
    sums[0, tid], sums[1, tid], sums[2, tid] = g2, u2, w2
    cuda.syncthreads()
    stride = THREADS_PER_BLOCK // 2
    while stride > 0:
        if tid < stride:
            for q in range(3):
                sums[q, tid] += sums[q, tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        for q in range(3):
            partials[cuda.blockIdx.x, q] = sums[q, 0]


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


# 3. dead units, one thread per column ------------------------------------------------------------
@cuda.jit
def dead_units_kernel(z, dead):
    # z: N, D; dead: D (written: 1 when the unit is <= 0 for every row, else 0)
    j = cuda.grid(1)
    if j < z.shape[1]:
        dead[j] = 1
        for i in range(z.shape[0]):
            if z[i, j] > 0:
                dead[j] = 0
                break


# launchers: device arrays in, launched -------------------------------------------------------------
def norm_blocks(n: int) -> int:
    """G, kernel 1's blocks (they stride over the rest): at most MAX_BLOCKS."""
    return max(1, min(MAX_BLOCKS, math.ceil(n / THREADS_PER_BLOCK)))


def norms_device(d_grad, d_before, d_after, d_partials, d_norms):
    """Kernels 1 and 2 on flat float64 device arrays (P,): d_norms (3,) through d_partials (G, 3)."""
    norm_partials_kernel[d_partials.shape[0], THREADS_PER_BLOCK](d_grad, d_before, d_after, d_partials)
    norm_finish_kernel[1, 32](d_partials, d_norms)


def dead_parts(n_rows: int, d: int) -> int:
    """The row parts of kernel 3: 1, a thread walks all N rows of its unit (version 2 splits them)."""
    return 1


def dead_units_device(d_z, d_dead, d_alive=None):
    """Kernel 3: d_dead (D,) int32 from d_z (N, D), one thread per unit. ``d_alive`` (version 2's
    scratch flags, ``dead_parts`` rows) is taken for the same signature and left alone."""
    dead_units_kernel[max(1, math.ceil(d_z.shape[1] / 64)), 64](d_z, d_dead)


# host functions: numpy in, numpy out (either version) -----------------------------------------------
def _launchers(launchers):
    """The module whose launchers run: this one (None), or version 2's, which calls these host
    functions with itself (kernels/gradient_clinic_v2.py imports this module, not the reverse)."""
    return sys.modules[__name__] if launchers is None else launchers


def layer_norms(grad, before, after, blocks=None, launchers=None):
    """(gradient norm, update norm, weight norm) of one layer, with kernels 1 and 2."""
    launch = _launchers(launchers)
    flat = [np.ascontiguousarray(a, dtype=np.float64).ravel() for a in (grad, before, after)]
    partials = cuda.device_array((blocks or launch.norm_blocks(flat[0].size), 3))
    norms = cuda.device_array(3)
    launch.norms_device(*(cuda.to_device(a) for a in flat), partials, norms)
    return tuple(float(v) for v in norms.copy_to_host())


def update_ratios(params_before, params_after, grads, blocks=None, launchers=None):
    """As the solution's ``update_ratios``: per-layer norms on the GPU, ratios on the host."""
    rows = np.array([layer_norms(g, b, a, blocks, launchers) for b, a, g in zip(params_before, params_after, grads)])
    grad_norms, update_norms, weight_norms = rows.T if len(rows) else (np.zeros(0),) * 3
    ratios = np.zeros(len(grads))
    moved = update_norms > 0
    with np.errstate(divide="ignore"):
        ratios[moved] = update_norms[moved] / weight_norms[moved]
    return grad_norms, update_norms, ratios


def dead_relu_fraction(pre_acts, launchers=None):
    """As the solution's ``dead_relu_fraction``, with kernel 3."""
    launch, fractions = _launchers(launchers), []
    for z in pre_acts:
        dead = cuda.device_array(z.shape[1], dtype=np.int32)
        alive = cuda.device_array((launch.dead_parts(*z.shape), z.shape[1]), dtype=np.uint8)
        launch.dead_units_device(cuda.to_device(np.ascontiguousarray(z)), dead, alive)
        fractions.append(float(dead.copy_to_host().mean()))
    return np.array(fractions)


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("gradient_clinic"))
