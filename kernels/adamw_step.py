"""AdamW's step, version 1, Numba CUDA: the overflow check and the fused update of a
mixed-precision trainer (PyTorch's fused AdamW and apex's FusedAdam do the same).

An optimizer step has no forward and backward of its own: it runs after the backward, once
per step, and its cost is memory traffic, since every state array is read and written once
and the arithmetic per element is a dozen FLOPs. So the plan is two kernels:

1. ``nonfinite_flags_kernel`` (the check, "forward" in time): each block looks at its share
   of the float16 gradients, one element a thread at a time, and writes one flag, 1 if it saw
   an inf or a NaN. The flags go back to the host (a few bytes) and decide whether kernel 2
   runs at all: a skipped step touches nothing, neither the weights nor the moments nor the
   step count.
2. ``adamw_update_kernel`` (the update): one thread per parameter reads g (16-bit), m, v and
   the master weight (float32), writes m, v and the master weight, and writes the 16-bit copy
   the next forward reads, all in one pass. Bias correction and the decoupled decay are
   scalars computed once on the host: lr / (1 - beta1^t), 1 / sqrt(1 - beta2^t) and
   1 - lr * weight_decay (1 for an exempt tensor), and 1 - beta1, 1 - beta2 in float64 before
   rounding (in float32, 1 - 0.999f is 5e-5 off). eps is added outside the square root.

Bytes per parameter per step: reads 2 (g16) + 12 (master, m, v), writes 12 + 2 (weight16):
28 bytes, against 16 held (see bytes_per_param in the notebook).

This is the version to read first. Version 2 (kernels/adamw_step_v2.py) does the same
arithmetic faster: issue 34 measured this one at 45% of copy bandwidth (1.04x PyTorch) on an
H200; version 2 gives a thread 4 neighbouring parameters at a time in 128-bit loads and
stores over a grid-stride loop without division, and the check 1,024 blocks reading 4
gradients a load. The launchers and host functions below take the same arguments in both.

Run the tests (both versions) under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_adamw_step_kernels.py
Check and time it: python -m backprop_traps.kernels.adamw_step (from any folder) runs both versions on
the benchmark's tiny cases (kernels/cases/adamw_step.py) in float64 and float32 against the
solution notebook, the CPU reference, and times them (kernels/runtime/self_check.py; the simulator
without a GPU).

Shapes: P parameters of one tensor, flattened. p, m, v (P,) in the master dtype (float32 in
mixed precision, float64 for the plain step); g, weight16 (P,).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.adamw_step: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math
import sys

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda

THREADS_PER_BLOCK = 256
FLAG_BLOCKS = 64


# 1. the overflow check --------------------------------------------------------------------------
@cuda.jit
def nonfinite_flags_kernel(g, flags):
    # g: (P,) any float dtype; flags: (blocks,) int32 (written), one per block
    seen = cuda.shared.array(1, numba.int32)
    if cuda.threadIdx.x == 0:
        seen[0] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), g.size, cuda.gridsize(1)):
        x = g[i]
        if not math.isfinite(x):
            seen[0] = 1  # every writer writes the same value: no race on the outcome
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        flags[cuda.blockIdx.x] = seen[0]


# 2. the fused update ------------------------------------------------------------------------------
@cuda.jit
def adamw_update_kernel(p, g, m, v, lr_corrected, rsqrt_bc2, beta1, beta2, one_minus_beta1,
                        one_minus_beta2, eps, shrink, one, p_out, m_out, v_out, p16):
    # p, m, v: (P,) master dtype; g: (P,); scalars in the master dtype; one: 1 in that dtype;
    # p_out, m_out, v_out: (P,) written, the same arrays as p, m, v for an in-place step (each
    # thread reads its element before it writes it); p16: (P,) the 16-bit copy, or 1 element
    i = cuda.grid(1)
    if i < p.size:
        gi = g[i] * one  # the gradient in the master dtype (float16 times float32 is float32)
        mi = beta1 * m[i] + one_minus_beta1 * gi
        vi = beta2 * v[i] + one_minus_beta2 * gi * gi
        pi = p[i] * shrink - lr_corrected * mi / (math.sqrt(vi) * rsqrt_bc2 + eps)
        m_out[i], v_out[i], p_out[i] = mi, vi, pi
        if p16.size == p.size:
            p16[i] = pi


def _scalars(dtype, t, lr, beta1, beta2, eps, weight_decay, decay):
    """The step's scalars, once per step on the host, in the master dtype."""
    to = dtype.type
    # 1 - beta2 in float64, then rounded: 1 - float32(0.999) would be 5e-5 off (cancellation)
    return (to(lr / (1 - beta1 ** t)), to(1 / math.sqrt(1 - beta2 ** t)), to(beta1), to(beta2),
            to(1 - beta1), to(1 - beta2), to(eps), to(1 - lr * weight_decay if decay else 1.0), to(1.0))


# launchers: device arrays in, launched -------------------------------------------------------------
def flag_blocks(n: int) -> int:
    """Kernel 1's grid (it strides over the rest): one flag per block, at most FLAG_BLOCKS."""
    return max(1, min(FLAG_BLOCKS, math.ceil(n / THREADS_PER_BLOCK)))


def nonfinite_flags_device(d_g, d_flags):
    """Kernel 1: d_flags (flag_blocks(P),) int32, 1 where the block saw an inf or a NaN."""
    nonfinite_flags_kernel[d_flags.size, THREADS_PER_BLOCK](d_g, d_flags)


def adamw_update_device(d_p, d_g, d_m, d_v, scalars, d_p_out, d_m_out, d_v_out, d_16):
    """Kernel 2, one thread per parameter: the outputs may be the inputs (an in-place step);
    ``scalars`` from ``_scalars``; d_16 the 16-bit copy (P,), or one element for none."""
    blocks = max(1, math.ceil(d_p.size / THREADS_PER_BLOCK))  # <= 2**31 - 1 up to 5.5e11 parameters
    adamw_update_kernel[blocks, THREADS_PER_BLOCK](d_p, d_g, d_m, d_v, *scalars, d_p_out, d_m_out, d_v_out, d_16)


# host functions: numpy in, numpy out (either version) ---------------------------------------------
def _launchers(launchers):
    """The module whose launchers run: this one (None), or version 2's, which calls these host
    functions with itself (kernels/adamw_step_v2.py imports this module, not the reverse)."""
    return sys.modules[__name__] if launchers is None else launchers


def has_nonfinite(g, launchers=None) -> bool:
    """Kernel 1: whether the gradients hold an inf or a NaN."""
    launch = _launchers(launchers)
    flat = cuda.to_device(np.ascontiguousarray(g).ravel())
    flags = cuda.device_array(launch.flag_blocks(flat.size), dtype=np.int32)
    launch.nonfinite_flags_device(flat, flags)
    return bool(flags.copy_to_host().any())


def _update(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay, half=None, launchers=None):
    shape, dtype = np.shape(p), np.asarray(p).dtype
    d_p, d_m, d_v = (cuda.to_device(np.ascontiguousarray(a, dtype=dtype).ravel()) for a in (p, m, v))
    d_g = cuda.to_device(np.ascontiguousarray(g).ravel())
    d_16 = cuda.device_array(d_p.size if half else 1, dtype=half or dtype)
    _launchers(launchers).adamw_update_device(
        d_p, d_g, d_m, d_v, _scalars(dtype, t, lr, beta1, beta2, eps, weight_decay, decay), d_p, d_m, d_v, d_16)  # in place
    out = [a.copy_to_host().reshape(shape) for a in (d_p, d_m, d_v)]
    return out + ([d_16.copy_to_host().reshape(shape)] if half else [])


def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay, launchers=None):
    """(p, m, v) as the solution's ``adamw_step``, in p's dtype."""
    return tuple(_update(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay, launchers=launchers))


def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay, launchers=None):
    """(master, weight16, m, v, t) as the solution's ``mixed_precision_step``."""
    if has_nonfinite(grad16, launchers):  # kernel 1 decides; kernel 2 never runs on a skipped step
        return master.copy(), master.astype(np.float16), m.copy(), v.copy(), t
    new_master, new_m, new_v, weight16 = _update(master, grad16, m, v, t + 1, lr, beta1, beta2, eps,
                                                 weight_decay, decay, half=np.float16, launchers=launchers)
    return new_master, weight16, new_m, new_v, t + 1


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("adamw_step"))
