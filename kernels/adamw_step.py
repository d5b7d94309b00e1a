"""AdamW's step, Numba CUDA: the overflow check and the fused update of a mixed-precision
trainer (PyTorch's fused AdamW and apex's FusedAdam do the same).

An optimizer step has no forward and backward of its own: it runs after the backward, once
per step, and its cost is memory traffic, since every state array is read and written once
and the arithmetic per element is a dozen FLOPs. So the plan is two kernels:

1. ``nonfinite_flags_kernel`` (the check, "forward" in time): each block looks at its share
   of the float16 gradients and writes one flag, 1 if it saw an inf or a NaN. The flags go
   back to the host (a few bytes) and decide whether kernel 2 runs at all: a skipped step
   touches nothing, neither the weights nor the moments nor the step count.
2. ``adamw_update_kernel`` (the update): one thread per parameter reads g (16-bit), m, v and
   the master weight (float32), writes m, v and the master weight, and writes the 16-bit copy
   the next forward reads, all in one pass. Bias correction and the decoupled decay are
   scalars computed once on the host: lr / (1 - beta1^t), 1 / sqrt(1 - beta2^t) and
   1 - lr * weight_decay (1 for an exempt tensor), and 1 - beta1, 1 - beta2 in float64 before
   rounding (in float32, 1 - 0.999f is 5e-5 off). eps is added outside the square root.

Bytes per parameter per step: reads 2 (g16) + 12 (master, m, v), writes 12 + 2 (weight16):
28 bytes, against 16 held (see bytes_per_param in the notebook).

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_adamw_step_kernels.py
Validate against the solution notebook and time it: python kernels/adamw_step.py

Shapes: P parameters of one tensor, flattened. p, m, v (P,) in the master dtype (float32 in
mixed precision, float64 for the plain step); g, weight16 (P,).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import cuda

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
                        one_minus_beta2, eps, shrink, one, p16):
    # p, m, v: (P,) master dtype, updated in place; g: (P,); scalars in the master dtype;
    # one: 1 in the master dtype; p16: (P,) the 16-bit copy (written), or a 1-element dummy
    i = cuda.grid(1)
    if i < p.size:
        gi = g[i] * one  # the gradient in the master dtype (float16 times float32 is float32)
        mi = beta1 * m[i] + one_minus_beta1 * gi
        vi = beta2 * v[i] + one_minus_beta2 * gi * gi
        m[i], v[i] = mi, vi
        pi = p[i] * shrink - lr_corrected * mi / (math.sqrt(vi) * rsqrt_bc2 + eps)
        p[i] = pi
        if p16.size == p.size:
            p16[i] = pi


# host functions: numpy in, numpy out ----------------------------------------------------------------
def _scalars(dtype, t, lr, beta1, beta2, eps, weight_decay, decay):
    """The step's scalars, once per step on the host, in the master dtype."""
    to = dtype.type
    # 1 - beta2 in float64, then rounded: 1 - float32(0.999) would be 5e-5 off (cancellation)
    return (to(lr / (1 - beta1 ** t)), to(1 / math.sqrt(1 - beta2 ** t)), to(beta1), to(beta2),
            to(1 - beta1), to(1 - beta2), to(eps), to(1 - lr * weight_decay if decay else 1.0), to(1.0))


def has_nonfinite(g) -> bool:
    """Kernel 1: whether the gradients hold an inf or a NaN."""
    flat = cuda.to_device(np.ascontiguousarray(g).ravel())
    blocks = max(1, min(FLAG_BLOCKS, math.ceil(flat.size / THREADS_PER_BLOCK)))
    flags = cuda.device_array(blocks, dtype=np.int32)
    nonfinite_flags_kernel[blocks, THREADS_PER_BLOCK](flat, flags)
    return bool(flags.copy_to_host().any())


def _update(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay, half=None):
    shape, dtype = np.shape(p), np.asarray(p).dtype
    d_p, d_m, d_v = (cuda.to_device(np.ascontiguousarray(a, dtype=dtype).ravel()) for a in (p, m, v))
    d_g = cuda.to_device(np.ascontiguousarray(g).ravel())
    d_16 = cuda.device_array(d_p.size if half else 1, dtype=half or dtype)
    blocks = max(1, math.ceil(d_p.size / THREADS_PER_BLOCK))
    adamw_update_kernel[blocks, THREADS_PER_BLOCK](
        d_p, d_g, d_m, d_v, *_scalars(dtype, t, lr, beta1, beta2, eps, weight_decay, decay), d_16)
    out = [a.copy_to_host().reshape(shape) for a in (d_p, d_m, d_v)]
    return out + ([d_16.copy_to_host().reshape(shape)] if half else [])


def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    """(p, m, v) as the solution's ``adamw_step``, in p's dtype."""
    return tuple(_update(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay))


def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    """(master, weight16, m, v, t) as the solution's ``mixed_precision_step``."""
    if has_nonfinite(grad16):  # kernel 1 decides; kernel 2 never runs on a skipped step
        return master.copy(), master.astype(np.float16), m.copy(), v.copy(), t
    new_master, new_m, new_v, weight16 = _update(master, grad16, m, v, t + 1, lr, beta1, beta2, eps,
                                                 weight_decay, decay, half=np.float16)
    return new_master, weight16, new_m, new_v, t + 1


def main() -> None:
    """Validate against the solution notebook; on a GPU, time the fused update."""
    from grader.loading.reference import load_solution
    ref = load_solution("adamw_step")
    simulated = bool(numba.config.ENABLE_CUDASIM)
    if not simulated and not cuda.is_available():
        print("no GPU here: run with NUMBA_ENABLE_CUDASIM=1 to validate under the simulator")
        return
    n = 1000 if simulated else 1 << 26
    rng = np.random.default_rng(0)
    master = rng.standard_normal(n).astype(np.float32)
    grad16 = (0.1 * rng.standard_normal(n)).astype(np.float16)
    m, v = np.zeros(n, np.float32), np.zeros(n, np.float32)
    args = (master, grad16, m, v, 0, 1e-3, 0.9, 0.999, 1e-8, 0.01, True)
    got, want = mixed_precision_step(*args), ref.mixed_precision_step(*args)
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-5, atol=1e-6)
    print(f"adamw kernels match the solution on {n} parameters (float32 master, float16 copy)")
    if simulated:
        print("simulator: nothing timed")
        return
    d = [cuda.to_device(a) for a in (master, grad16, m, v)]
    d16 = cuda.device_array(n, dtype=np.float16)
    scalars = _scalars(np.dtype(np.float32), 1, 1e-3, 0.9, 0.999, 1e-8, 0.01, True)
    blocks = math.ceil(n / THREADS_PER_BLOCK)
    adamw_update_kernel[blocks, THREADS_PER_BLOCK](d[0], d[1], d[2], d[3], *scalars, d16)
    start, stop = cuda.event(), cuda.event()
    start.record()
    for _ in range(20):
        adamw_update_kernel[blocks, THREADS_PER_BLOCK](d[0], d[1], d[2], d[3], *scalars, d16)
    stop.record()
    stop.synchronize()
    ms = cuda.event_elapsed_time(start, stop) / 20
    print(f"fused update: {ms:.3f} ms for {n} parameters, {28 * n / ms / 1e6:.0f} GB/s (28 bytes each)")


if __name__ == "__main__":
    main()
