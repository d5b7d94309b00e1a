"""The optimizer side of a mixed-precision step, fused, in Numba CUDA, version 1: unscale,
inf/NaN check, global norm, scale update, clipped SGD.

All K gradient tensors are one flat buffer, as fused optimizers (and PyTorch's
multi_tensor_apply) treat them. Three launches, and the host reads nothing back in between:

  1. unscale_check_sqnorm: each thread walks its grid-stride share of the float16 gradients
     ONCE: it reads the raw 16 bits, writes the value divided by the scale, raises found_inf
     on an inf or NaN, and adds the square of every finite value to its running sum; a
     shared-memory tree reduction leaves one partial sum per block.
  2. finish (one block): sums the partials into the global norm and the clip coefficient
     min(max_norm / (norm + 1e-6), 1), then applies the scaler's update rule to the scale and
     its growth counter, in place, on the device (what torch._amp_update_scale_ does).
  3. clipped_sgd: unless found_inf, g <- coef * g and p <- p - lr * g, in place.
Kernels 1 and 3 take one entry a thread at a time, in a grid-stride ``for`` loop.

This is the version to read first. Version 2 (kernels/loss_scaling_v2.py) runs the same three
launches faster: issue 34 measured kernels 1 and 3 at 47% and 38% of copy bandwidth on an
H200; version 2 gives a thread 4 entries at a time (a 64-bit load of float16 bits, 128-bit
loads and stores of the gradients and parameters) in while-loop grid strides over unsigned
offsets, with no division to count the steps. The launchers and host functions take the same
arguments in both.

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

Check and time it: python -m backprop_traps.kernels.loss_scaling (from any folder) runs both versions on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.loss_scaling: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import functools
import math
import sys

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.common.row_reduction import block_sum

THREADS_PER_BLOCK = 256
MAX_BLOCKS = 1024
EXPONENT_ALL_ONES = 0x1F
TWO_TO_MINUS_24 = 2.0 ** -24  # the smallest float16 subnormal


# ---------------------------------------------------------------- device helpers

@cuda.jit(device=True)
def half_bits_significand(bits):
    """The finite float16 with bit pattern ``bits`` (an int32) is +-this integer * 2^-24, exactly:
    the mantissa for a subnormal, (1024 + mantissa) << (exponent - 1) for a normal number
    (at most 2^40: an int64, and exact in float32 too, having at most 11 significant bits)."""
    exponent = (bits >> 10) & EXPONENT_ALL_ONES
    mantissa = np.int64(bits & 0x3FF)
    if exponent == 0:
        return mantissa
    return (mantissa + 1024) << (exponent - 1)


@functools.lru_cache(maxsize=None)
def _kernels(threads_per_block: int, dtype: np.dtype):
    """Kernels 1 and 2, compiled per (TPB, dtype): their shared arrays need both."""
    if threads_per_block < 1 or threads_per_block & (threads_per_block - 1):
        raise ValueError(f"threads_per_block must be a power of two, got {threads_per_block}")
    tpb = threads_per_block
    shared_type = numba.from_dtype(dtype)
    zero, one, eps = dtype.type(0), dtype.type(1), dtype.type(1e-6)
    ulp_of_half = dtype.type(TWO_TO_MINUS_24)  # constants in the gradients' dtype: no float64 in float32
    nan, inf = dtype.type(np.nan), dtype.type(np.inf)

    # 1. unscale + non-finite check + squared norm, one read of each float16
    @cuda.jit
    def unscale_check_sqnorm(bits, scale, grads, partials, found_inf):
        # bits: N uint16; scale: (1,); grads: N (written); partials: B (written);
        # found_inf: (1,) int32, set to 1 on any inf/NaN (never cleared here: the host zeroes it)
        tid = cuda.threadIdx.x
        acc = zero
        step = ulp_of_half * (one / scale[0])  # 2^-24 / scale, once per thread: no divide per element
        for i in range(cuda.grid(1), bits.shape[0], cuda.gridsize(1)):
            b = np.int32(bits[i])
            if ((b >> 10) & EXPONENT_ALL_ONES) == EXPONENT_ALL_ONES:
                found_inf[0] = 1  # every writer writes 1: the race is harmless
                grads[i] = nan if b & 0x3FF else (-inf if b & 0x8000 else inf)  # exponent all ones
            else:
                g = shared_type(half_bits_significand(b)) * step  # in the gradients' dtype
                if b & 0x8000:
                    g = -g
                grads[i] = g
                acc += g * g
        shared = cuda.shared.array(tpb, shared_type)
        total = block_sum(shared, acc, tid, tpb)  # every thread calls it
        if tid == 0:
            partials[cuda.blockIdx.x] = total

    # 2. one block: global norm, clip coefficient, and the scaler's update, on the device
    @cuda.jit
    def finish(partials, found_inf, max_norm, growth_factor, backoff_factor, growth_interval,
               scale, tracker, stats):
        # partials: B; scale: (1,) and tracker: (1,) int32, updated in place;
        # stats: (2,) written: total_norm (of the finite entries), clip coefficient
        tid = cuda.threadIdx.x
        acc = zero
        for j in range(tid, partials.shape[0], tpb):
            acc += partials[j]
        shared = cuda.shared.array(tpb, shared_type)
        total = block_sum(shared, acc, tid, tpb)  # every thread calls it
        if tid == 0:
            norm = math.sqrt(total)
            stats[0] = norm
            stats[1] = min(max_norm / (norm + eps), one)
            if found_inf[0] != 0:  # overflow: back off, restart the count
                scale[0] = scale[0] * backoff_factor
                tracker[0] = 0
            elif tracker[0] + 1 == growth_interval:  # growth_interval clean steps in a row
                scale[0] = scale[0] * growth_factor
                tracker[0] = 0
            else:
                tracker[0] += 1

    return unscale_check_sqnorm, finish


# 3. clipped SGD, skipped on an overflow: one thread per element (grid-stride)
@cuda.jit
def clipped_sgd_kernel(params, grads, stats, found_inf, lr):
    # params, grads: N, both updated in place (grads becomes the clipped gradients)
    if found_inf[0] != 0:
        return
    coef = stats[1]
    for i in range(cuda.grid(1), params.shape[0], cuda.gridsize(1)):
        g = grads[i] * coef
        grads[i] = g
        params[i] = params[i] - lr * g


# ---------------------------------------------------------------- launches on device arrays

def grid(n, threads_per_block=THREADS_PER_BLOCK):
    return min(max(1, math.ceil(n / threads_per_block)), MAX_BLOCKS)


def unscale_device(d_bits, d_scale, d_grads, d_partials, d_found_inf, d_stats, max_norm,
                   threads_per_block=THREADS_PER_BLOCK, d_tracker=None, update=(2.0, 0.5, 2000)):
    """Kernels 1 and 2 on device arrays (``d_partials`` holds one entry per block of kernel 1).
    Without ``d_tracker`` the scale is not updated (a throwaway counter takes the update)."""
    dtype = np.dtype(d_grads.dtype)
    kernel, finish = _kernels(threads_per_block, dtype)
    kernel[d_partials.shape[0], threads_per_block](d_bits, d_scale, d_grads, d_partials, d_found_inf)
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
    clipped_sgd_kernel[d_partials.shape[0], threads_per_block](
        d_params, d_grads, d_stats, d_found_inf, dtype.type(hparams["lr"]))


# ---------------------------------------------------------------- host functions: numpy in, out (either version)

def _launchers(launchers):
    """The module whose launchers run: this one (None), or version 2's, which calls these host
    functions with itself (kernels/loss_scaling_v2.py imports this module, not the reverse)."""
    return sys.modules[__name__] if launchers is None else launchers

def _flat_bits(scaled_grads):
    return np.concatenate([np.ascontiguousarray(g, dtype=np.float16).ravel() for g in scaled_grads]).view(np.uint16)


def _split(flat, like):
    out, start = [], 0
    for a in like:
        out.append(flat[start:start + a.size].reshape(a.shape))
        start += a.size
    return out


def unscale_check_sqnorm(scaled_grads, scale, dtype=np.float64, threads_per_block=THREADS_PER_BLOCK,
                         blocks=None, launchers=None):
    """(grads, found_inf, total_norm) for a list of float16 arrays: grads as the solution's
    unscale_grads gives them (in ``dtype``), and the global norm of their finite entries.
    ``blocks`` (default: one per TPB entries, at most MAX_BLOCKS) sets kernel 1's grid."""
    bits, launch = _flat_bits(scaled_grads), _launchers(launchers)
    d_grads = cuda.device_array(bits.size, dtype=dtype)
    d_partials = cuda.device_array(blocks or launch.grid(bits.size, threads_per_block), dtype=dtype)
    d_found_inf, d_stats = cuda.to_device(np.zeros(1, np.int32)), cuda.device_array(2, dtype=dtype)
    launch.unscale_device(cuda.to_device(bits), cuda.to_device(np.array([scale], dtype=dtype)), d_grads,
                          d_partials, d_found_inf, d_stats, 1.0, threads_per_block)
    grads = _split(d_grads.copy_to_host(), scaled_grads)
    return grads, bool(d_found_inf.copy_to_host()[0]), float(d_stats.copy_to_host()[0])


def amp_step(params, grads, loss, state, hparams, threads_per_block=THREADS_PER_BLOCK, launchers=None):
    """The solution's amp_step, numpy in and out: the float16 backward of scale * loss is
    emulated on the host (as the contract says), everything after it runs in the kernels."""
    scale, tracker = state
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = [(scale * g).astype(np.float16) for g in grads]
    bits, launch = _flat_bits(scaled), _launchers(launchers)
    flat_params = np.concatenate([np.ascontiguousarray(p, dtype=np.float64).ravel() for p in params])
    dtype = flat_params.dtype
    d_params = cuda.to_device(flat_params)
    d_scale = cuda.to_device(np.array([scale], dtype=dtype))
    d_tracker = cuda.to_device(np.array([tracker], dtype=np.int32))
    d_grads = cuda.device_array(bits.size, dtype=dtype)
    d_partials = cuda.device_array(launch.grid(bits.size, threads_per_block), dtype=dtype)
    d_found_inf, d_stats = cuda.to_device(np.zeros(1, np.int32)), cuda.device_array(2, dtype=dtype)
    launch.amp_step_device(d_params, cuda.to_device(bits), d_scale, d_tracker, d_grads, d_partials,
                           d_found_inf, d_stats, hparams, threads_per_block)
    skipped = bool(d_found_inf.copy_to_host()[0])
    new_state = (float(d_scale.copy_to_host()[0]), int(d_tracker.copy_to_host()[0]))
    clipped = None if skipped else _split(d_grads.copy_to_host(), params)
    return _split(d_params.copy_to_host(), params), new_state, clipped, skipped


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("loss_scaling"))
