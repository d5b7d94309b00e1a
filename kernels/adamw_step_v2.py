"""AdamW's step, version 2, Numba CUDA: the same two kernels as version 1, made fast (issue 34).

Version 1 (kernels/adamw_step.py) is the one to read first: the overflow check (a flag a
block, read by the host, deciding whether the update runs) and the fused update (one thread
per parameter: g, m, v and the master weight read once, m, v, the master and its 16-bit copy
written once), with the step's scalars computed once on the host. Issue 34 measured it at
45% of copy bandwidth on an H200 (1.04x PyTorch's fused AdamW). What changed:

  - a thread takes 4 neighbouring parameters at a time, every array read and written in
    128-bit vectors (float16's in 64-bit ones, kernels/common/patterns.py's load4/store4),
    over a grid-stride loop of unsigned offsets that needs no division; the last P % 4
    parameters one at a time;
  - the update's grid is capped (MAX_BLOCKS) and strides over the rest;
  - the check's grid is wide enough to fill a GPU (1,024 blocks, not 64), and reads 4
    gradients a load.

What the static table predicts: 128-bit loads in the loops, no 64-bit division. The arrays
must start on a 16-byte boundary (the launchers check). The scalars and the host functions
are version 1's, run on these launchers.

Run the tests (both versions) under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_adamw_step_kernels.py
Check and time both versions: python -m backprop_traps.kernels.adamw_step (from any folder) runs them on
the benchmark's tiny cases (kernels/cases/adamw_step.py) in float64 and float32 against the
solution notebook, the CPU reference, and times them (kernels/runtime/self_check.py; the simulator
without a GPU).

Shapes: P parameters of one tensor, flattened. p, m, v (P,) in the master dtype (float32 in
mixed precision, float64 for the plain step); g, weight16 (P,).
"""
from __future__ import annotations

import math
import sys

import numba

from backprop_traps.kernels import adamw_step as v1
from backprop_traps.kernels.adamw_step import _scalars  # noqa: F401  (the cases take it from either version)
from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.common.patterns import VECTOR, aligned, load4, store4, u64

THREADS_PER_BLOCK = 256
FLAG_BLOCKS = 1024        # one flag a block; enough blocks to fill a GPU
MAX_BLOCKS = 132 * 16     # the update's grid-stride grid: 8 blocks of 256 on each of 132 SMs, twice


# 1. the overflow check --------------------------------------------------------------------------
@cuda.jit(device=True)
def finite4(a, b, c, d):
    return math.isfinite(a) and math.isfinite(b) and math.isfinite(c) and math.isfinite(d)


@cuda.jit
def nonfinite_flags_kernel(g, size, flags):
    # g: (P,) any float dtype; size: P as u64; flags: (blocks,) int32 (written), one per block
    seen = cuda.shared.array(1, numba.int32)
    if cuda.threadIdx.x == 0:
        seen[0] = 0
    cuda.syncthreads()
    i, stride = u64(cuda.grid(1)) * u64(VECTOR), u64(cuda.gridsize(1)) * u64(VECTOR)
    body = size - size % u64(VECTOR)
    while i < body:
        g0, g1, g2, g3 = load4(g, i)
        if not finite4(g0, g1, g2, g3):
            seen[0] = 1  # every writer writes the same value: no race on the outcome
        i += stride
    i = body + u64(cuda.grid(1))
    if i < size and not math.isfinite(g[i]):             # the last P % 4, one a thread
        seen[0] = 1
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        flags[cuda.blockIdx.x] = seen[0]


# 2. the fused update ------------------------------------------------------------------------------
@cuda.jit(device=True)
def adamw(p, g, m, v, lr_corrected, rsqrt_bc2, beta1, beta2, one_minus_beta1, one_minus_beta2, eps, shrink, one):
    """One parameter's (p, m, v) after the step."""
    gi = g * one  # the gradient in the master dtype (float16 times float32 is float32)
    mi = beta1 * m + one_minus_beta1 * gi
    vi = beta2 * v + one_minus_beta2 * gi * gi
    return p * shrink - lr_corrected * mi / (math.sqrt(vi) * rsqrt_bc2 + eps), mi, vi


@cuda.jit
def adamw_update_kernel(p, g, m, v, size, lr_corrected, rsqrt_bc2, beta1, beta2, one_minus_beta1,
                        one_minus_beta2, eps, shrink, one, p_out, m_out, v_out, p16):
    # p, m, v: (P,) master dtype; g: (P,); size: P as u64; scalars in the master dtype; one: 1
    # in that dtype; p_out, m_out, v_out: (P,) written, the same arrays as p, m, v for an
    # in-place step (each thread reads its 4 elements before it writes them); p16: (P,) the
    # 16-bit copy, or 1 element
    s = (lr_corrected, rsqrt_bc2, beta1, beta2, one_minus_beta1, one_minus_beta2, eps, shrink, one)
    half = p16.size == p.size
    i, stride = u64(cuda.grid(1)) * u64(VECTOR), u64(cuda.gridsize(1)) * u64(VECTOR)
    body = size - size % u64(VECTOR)
    while i < body:
        p0, p1, p2, p3 = load4(p, i)
        g0, g1, g2, g3 = load4(g, i)
        m0, m1, m2, m3 = load4(m, i)
        v0, v1, v2, v3 = load4(v, i)
        p0, m0, v0 = adamw(p0, g0, m0, v0, *s)
        p1, m1, v1 = adamw(p1, g1, m1, v1, *s)
        p2, m2, v2 = adamw(p2, g2, m2, v2, *s)
        p3, m3, v3 = adamw(p3, g3, m3, v3, *s)
        store4(m_out, i, m0, m1, m2, m3)
        store4(v_out, i, v0, v1, v2, v3)
        store4(p_out, i, p0, p1, p2, p3)
        if half:
            store4(p16, i, p0, p1, p2, p3)
        i += stride
    i = body + u64(cuda.grid(1))
    if i < size:                                          # the last P % 4, one a thread
        pi, mi, vi = adamw(p[i], g[i], m[i], v[i], *s)
        m_out[i], v_out[i], p_out[i] = mi, vi, pi
        if half:
            p16[i] = pi


# launchers: device arrays in, launched -------------------------------------------------------------
def flag_blocks(n: int) -> int:
    """Kernel 1's grid (it strides over the rest): one flag per block, at most FLAG_BLOCKS."""
    return max(1, min(FLAG_BLOCKS, math.ceil(n / (VECTOR * THREADS_PER_BLOCK))))


def _check(*arrays):
    if not aligned(*arrays):
        raise ValueError("the AdamW kernels read 4 parameters a load: the arrays must start on a 16-byte boundary")


def nonfinite_flags_device(d_g, d_flags):
    """Kernel 1: d_flags (flag_blocks(P),) int32, 1 where the block saw an inf or a NaN."""
    _check(d_g)
    nonfinite_flags_kernel[d_flags.size, THREADS_PER_BLOCK](d_g, u64(d_g.size), d_flags)


def adamw_update_device(d_p, d_g, d_m, d_v, scalars, d_p_out, d_m_out, d_v_out, d_16):
    """Kernel 2, 4 parameters a thread at a time: the outputs may be the inputs (an in-place
    step); ``scalars`` from ``_scalars``; d_16 the 16-bit copy (P,), or one element for none."""
    _check(d_p, d_g, d_m, d_v, d_p_out, d_m_out, d_v_out, d_16)
    blocks = max(1, min(math.ceil(d_p.size / (VECTOR * THREADS_PER_BLOCK)), MAX_BLOCKS))
    adamw_update_kernel[blocks, THREADS_PER_BLOCK](d_p, d_g, d_m, d_v, u64(d_p.size), *scalars, d_p_out, d_m_out,
                                                  d_v_out, d_16)


# host functions: version 1's, on these launchers -----------------------------------------------------
def has_nonfinite(g) -> bool:
    return v1.has_nonfinite(g, launchers=sys.modules[__name__])


def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    return v1.adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay, launchers=sys.modules[__name__])


def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    return v1.mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay,
                                   launchers=sys.modules[__name__])
