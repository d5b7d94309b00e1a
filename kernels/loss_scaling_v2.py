"""The optimizer side of a mixed-precision step, fused, in Numba CUDA, version 2: version 1's
three launches (kernels/loss_scaling.py, the one to read first), 4 entries a thread (issue 34).

Version 1 takes one entry a thread at a time in grid-stride ``for`` loops; issue 34 measured
its kernels 1 and 3 at 47% and 38% of copy bandwidth on an H200. What changed here: kernels 1
and 3 read and write 4 neighbouring entries at a time (a 64-bit load of float16 bits, 128-bit
loads and stores of the gradients and parameters), in while-loop grid strides over unsigned
offsets (no division to count the steps), the last N % 4 one at a time; the inf/NaN flag is
written once a thread, not once an entry. Kernel 2 is unchanged. The buffers must start on a
16-byte boundary (the launchers check). The float16 decoding and the host functions are
version 1's (these launchers run under them).

All K gradient tensors are one flat buffer, as fused optimizers (and PyTorch's
multi_tensor_apply) treat them. Three launches, and the host reads nothing back in between:

  1. unscale_check_sqnorm: each thread walks its grid-stride share of the float16 gradients
     ONCE, 4 at a time (a 64-bit load of their bits, a 128-bit store of the unscaled values):
     it writes each value divided by the scale, raises found_inf on an inf or NaN, and adds
     the square of every finite value to its running sum; a warp-shuffle block sum
     (kernels/common/row_reduction.py) leaves one partial sum per block.
  2. finish (one block): sums the partials into the global norm and the clip coefficient
     min(max_norm / (norm + 1e-6), 1), then applies the scaler's update rule to the scale and
     its growth counter, in place, on the device (what torch._amp_update_scale_ does).
  3. clipped_sgd: unless found_inf, g <- coef * g and p <- p - lr * g, in place, 4 entries
     at a time in 128-bit loads and stores.

No forward/backward pair here: this question's gradients come in ready-made, and the
kernels are what the step does with them. The norm is why a step needs two passes over the
gradients: no entry can be clipped before every block's partial is in.

Reading float16 as bits. The gradients arrive as uint16 bit patterns (a float16 array's
``.view(np.uint16)``): sign (1 bit), exponent (5), mantissa (10). An exponent field of all
ones is inf (mantissa 0) or NaN (any other mantissa), so the overflow check is one integer
compare; every other pattern is an integer times 2^-24, exactly: (1024 + mantissa) shifted
left by exponent - 1, or the mantissa alone for the subnormals. That needs no float16 support
from Numba or the GPU, and runs the same under the simulator. Unscaling multiplies that
integer by 2^-24 / scale, computed once per thread in the gradients' dtype (no divide and no
float64 per element in a float32 step, as benchmarks/kernels_static.py checks); the unscaled
gradients, the norm and the parameters are in the parameters' dtype.

Shapes: N = total gradient entries; TPB = threads per block (a power of two); B = blocks,
at most MAX_BLOCKS (grid-stride loops cover the rest). scale and stats live on the device.
Run: tests run these under the simulator (NUMBA_ENABLE_CUDASIM=1, tests/conftest.py); with
a GPU, BACKPROP_TRAPS_REAL_GPU=1 python -m pytest tests/kernels/test_loss_scaling_kernels.py.

Check and time both versions: python -m backprop_traps.kernels.loss_scaling (from any folder) runs them on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""
from __future__ import annotations

import functools
import math
import sys

import numba
import numpy as np

from backprop_traps.kernels import loss_scaling as v1
from backprop_traps.kernels.loss_scaling import (EXPONENT_ALL_ONES, MAX_BLOCKS, THREADS_PER_BLOCK, TWO_TO_MINUS_24,
                                                 half_bits_significand)
from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.common.patterns import VECTOR, aligned, load4, store4, u64
from backprop_traps.kernels.common.row_reduction import block_sum


@functools.lru_cache(maxsize=None)
def _kernels(threads_per_block: int, dtype: np.dtype):
    """Kernels 1 and 2, compiled per (TPB, dtype): their shared arrays need both."""
    if threads_per_block < 1 or threads_per_block & (threads_per_block - 1):
        raise ValueError(f"threads_per_block must be a power of two, got {threads_per_block}")
    tpb = threads_per_block
    shared_type = numba.from_dtype(dtype)
    zero, one = dtype.type(0), dtype.type(1)
    ulp_of_half = dtype.type(TWO_TO_MINUS_24)  # constants in the gradients' dtype: no float64 in float32
    nan, inf = dtype.type(np.nan), dtype.type(np.inf)

    @cuda.jit(device=True)
    def unscale(raw, step):
        """(the unscaled gradient of float16 bits ``raw``, its square, 1 if inf or NaN else 0)."""
        b = np.int32(raw)
        if ((b >> 10) & EXPONENT_ALL_ONES) == EXPONENT_ALL_ONES:  # exponent all ones
            return (nan if b & 0x3FF else (-inf if b & 0x8000 else inf)), zero, 1
        g = shared_type(half_bits_significand(b)) * step  # in the gradients' dtype
        return (-g if b & 0x8000 else g), g * g, 0

    # 1. unscale + non-finite check + squared norm, one read of each float16
    @cuda.jit
    def unscale_check_sqnorm(bits, size, scale, grads, partials, found_inf):
        # bits: N uint16; size: N as u64; scale: (1,); grads: N (written); partials: B (written);
        # found_inf: (1,) int32, set to 1 on any inf/NaN (never cleared here: the host zeroes it).
        # 4 entries a thread at a time: a 64-bit load of bits, a 128-bit store of grads.
        tid = cuda.threadIdx.x
        acc, bad = zero, 0
        step = ulp_of_half * (one / scale[0])  # 2^-24 / scale, once per thread: no divide per element
        i, stride = u64(cuda.grid(1)) * u64(VECTOR), u64(cuda.gridsize(1)) * u64(VECTOR)
        body = size - size % u64(VECTOR)
        while i < body:
            r0, r1, r2, r3 = load4(bits, i)
            g0, q0, f0 = unscale(r0, step)
            g1, q1, f1 = unscale(r1, step)
            g2, q2, f2 = unscale(r2, step)
            g3, q3, f3 = unscale(r3, step)
            store4(grads, i, g0, g1, g2, g3)
            acc += q0 + q1 + q2 + q3
            bad |= f0 | f1 | f2 | f3
            i += stride
        i = body + u64(cuda.grid(1))
        if i < size:                                       # the last N % 4, one a thread
            g, q, f = unscale(bits[i], step)
            grads[i] = g
            acc += q
            bad |= f
        if bad:
            found_inf[0] = 1  # every writer writes 1: the race is harmless
        shared = cuda.shared.array(tpb, shared_type)
        total = block_sum(shared, acc, tid, tpb)  # every thread calls it
        if tid == 0:
            partials[cuda.blockIdx.x] = total

    # 2. one block: global norm, clip coefficient, and the scaler's update: version 1's kernel,
    # unchanged (it reads B partials once; nothing in it is worth a faster form)
    finish = v1._kernels(threads_per_block, dtype)[1]

    return unscale_check_sqnorm, finish


# 3. clipped SGD, skipped on an overflow: 4 entries a thread at a time (grid-stride, 128-bit)
@cuda.jit
def clipped_sgd_kernel(params, grads, size, stats, found_inf, lr):
    # params, grads: N, both updated in place (grads becomes the clipped gradients); size: N as u64
    if found_inf[0] != 0:
        return
    coef = stats[1]
    i, stride = u64(cuda.grid(1)) * u64(VECTOR), u64(cuda.gridsize(1)) * u64(VECTOR)
    body = size - size % u64(VECTOR)
    while i < body:
        g0, g1, g2, g3 = load4(grads, i)
        p0, p1, p2, p3 = load4(params, i)
        g0, g1, g2, g3 = g0 * coef, g1 * coef, g2 * coef, g3 * coef
        store4(grads, i, g0, g1, g2, g3)
        store4(params, i, p0 - lr * g0, p1 - lr * g1, p2 - lr * g2, p3 - lr * g3)
        i += stride
    i = body + u64(cuda.grid(1))
    if i < size:                                           # the last N % 4
        g = grads[i] * coef
        grads[i] = g
        params[i] = params[i] - lr * g


# ---------------------------------------------------------------- launches on device arrays

def grid(n, threads_per_block=THREADS_PER_BLOCK):
    return min(max(1, math.ceil(n / (VECTOR * threads_per_block))), MAX_BLOCKS)


def _check(*arrays):
    if not aligned(*arrays):
        raise ValueError("the loss-scaling kernels read 4 entries a load: the buffers must start on a 16-byte boundary")


def unscale_device(d_bits, d_scale, d_grads, d_partials, d_found_inf, d_stats, max_norm,
                   threads_per_block=THREADS_PER_BLOCK, d_tracker=None, update=(2.0, 0.5, 2000)):
    """Kernels 1 and 2 on device arrays (``d_partials`` holds one entry per block of kernel 1).
    Without ``d_tracker`` the scale is not updated (a throwaway counter takes the update)."""
    dtype = np.dtype(d_grads.dtype)
    _check(d_bits, d_grads)
    kernel, finish = _kernels(threads_per_block, dtype)
    kernel[d_partials.shape[0], threads_per_block](d_bits, u64(d_bits.size), d_scale, d_grads, d_partials, d_found_inf)
    scale = d_scale if d_tracker is not None else cuda.to_device(np.ones(1, dtype=dtype))
    tracker = d_tracker if d_tracker is not None else cuda.to_device(np.zeros(1, dtype=np.int32))
    growth, backoff, interval = update
    finish[1, threads_per_block](d_partials, d_found_inf, dtype.type(max_norm), dtype.type(growth),
                                 dtype.type(backoff), np.int32(interval), scale, tracker, d_stats)


def amp_step_device(d_params, d_bits, d_scale, d_tracker, d_grads, d_partials, d_found_inf, d_stats,
                    hparams, threads_per_block=THREADS_PER_BLOCK):
    """One whole step on flat device buffers: kernels 1, 2, 3; ``d_found_inf`` must be 0 before."""
    dtype = np.dtype(d_params.dtype)
    unscale_device(d_bits, d_scale, d_grads, d_partials, d_found_inf, d_stats, hparams["max_norm"],
                   threads_per_block, d_tracker,
                   (hparams["growth_factor"], hparams["backoff_factor"], hparams["growth_interval"]))
    _check(d_params)
    clipped_sgd_kernel[d_partials.shape[0], threads_per_block](
        d_params, d_grads, u64(d_params.size), d_stats, d_found_inf, dtype.type(hparams["lr"]))


# ---------------------------------------------------------------- host functions: version 1's, on these launchers

def unscale_check_sqnorm(scaled_grads, scale, dtype=np.float64, threads_per_block=THREADS_PER_BLOCK, blocks=None):
    return v1.unscale_check_sqnorm(scaled_grads, scale, dtype, threads_per_block, blocks, launchers=sys.modules[__name__])


def amp_step(params, grads, loss, state, hparams, threads_per_block=THREADS_PER_BLOCK):
    return v1.amp_step(params, grads, loss, state, hparams, threads_per_block, launchers=sys.modules[__name__])
