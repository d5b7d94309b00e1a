"""Fake quantisation with a straight-through backward, in Numba CUDA, version 1.

Kernels, forward directly above backward:
  1. fake_quant_forward_kernel: out = scale * clip(round(x / scale), qmin, qmax), fused with a
     BIT-PACKED in-range mask, bit = 1 where qmin <= x / scale <= qmax (both ends included).
     One thread per mask byte computes the 8 elements that byte covers, so every byte has a
     single writer: no atomics.
  2. fake_quant_backward_kernel: the straight-through estimator, dx = dout where the mask bit
     is 1 and 0 elsewhere. One thread per element; it reads dout and the mask, never x.

This is the version to read first. Version 2 (kernels/straight_through_v2.py) computes the
same bits faster: issue 34 measured this forward at 21% of copy bandwidth on an H200 (a
thread reads its byte's 8 elements one by one, so a warp's loads land 32 bytes apart);
version 2 reads and writes a byte's 8 elements in two 128-bit loads and stores, in both
kernels, over a grid-stride loop sized to fill the GPU, the partial last byte element by
element. The launchers and host functions take the same arguments in both.

Shape letters: E = x.size. The kernels see the flattened arrays; the host functions accept
any shape and give it back. The mask holds flat element f at bit 7 - f % 8 of byte f // 8:
np.packbits' order (first element in the highest bit, unused bits of the last byte zero),
as in kernels/vram_trap.py.

Bytes kept for the backward pass, per element: x itself, 8 in float64 (4 in float32), or
one bit of mask: 64 times less in float64. That is why the backward takes the mask rather
than the solution's x: from out alone an input exactly at the top of the range (gradient
passes) cannot be told from one far beyond it (gradient blocked).

Rounding is half to even, as np.round, and stays in x's dtype: (v + M) - M with
M = 1.5 * 2^p (p = 23 for float32, 52 for float64) rounds v to an integer in the IEEE default
mode for |v| <= 2^(p - 1), on a GPU and in the simulator alike. round() would give an int64,
and q * scale would then be float64 arithmetic in a float32 kernel (41 float64 instructions,
benchmarks/kernels_static.py found). The value is clipped before it is rounded, so the host
only needs |qmin|, |qmax| <= 2^(p - 1) (2^22 in float32: any 16-bit grid), and checks it.

NaN: x / scale = NaN is outside the range (mask bit 0, no gradient) and its output is NaN, as
the solution's numpy gives; the kernel says so explicitly, because min/max with a NaN differ
between the simulator (Python's min and max keep their first argument) and a GPU (fminf and
fmaxf drop the NaN), and round(NaN) raises in one and gives garbage in the other.

Run: the host functions at the bottom take and return numpy arrays. On a machine with no
GPU set NUMBA_ENABLE_CUDASIM=1 before numba is imported (tests/conftest.py does) to run
them in Numba's CUDA simulator; on a GPU they compile for the device. The kernels are
generic over the float dtype: scale and the ends are passed in the array's dtype, so
float32 math is not promoted to float64.

Check and time it: python -m backprop_traps.kernels.straight_through (from any folder) runs both versions on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""

if __name__ == "__main__":  # python -m backprop_traps.kernels.straight_through: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math
import sys

import numpy as np

from backprop_traps.kernels.runtime.device import cuda

THREADS_PER_BLOCK = 128  # the one launch config: a 1-D grid, one thread per byte or element


# ---------------------------------------------------------------- device helpers

@cuda.jit(device=True)
def mask_bit(mask, f):
    """1 if flat element f was inside the range in the forward pass (np.packbits order)."""
    return (mask[f // 8] >> (7 - f % 8)) & 1


# ---------------------------------------------------------------- 1. forward + packed mask

@cuda.jit
def fake_quant_forward_kernel(x, scale, lo, hi, magic, out, mask):
    """x (E,) -> out (E,), mask uint8 (ceil(E / 8),); lo, hi = qmin, qmax and magic = M, in x's dtype."""
    byte = cuda.grid(1)
    if byte >= mask.shape[0]:
        return
    bits = 0
    for t in range(8):
        f = byte * 8 + t
        if f < x.shape[0]:
            u = x[f] / scale  # grid units, before rounding
            if lo <= u and u <= hi:
                bits |= 1 << (7 - t)
            if u != u:  # NaN in, NaN out, bit 0: the same on every target
                out[f] = u
            else:
                v = min(max(u, lo), hi)
                out[f] = ((v + magic) - magic) * scale  # rounded half to even, in x's dtype
    mask[byte] = bits


# ---------------------------------------------------------------- 2. backward: the STE

@cuda.jit
def fake_quant_backward_kernel(dout, mask, dx, zero):
    """dout (E,), mask uint8 (ceil(E / 8),) -> dx (E,): dout where the bit is set, else 0."""
    f = cuda.grid(1)
    if f < dx.shape[0]:
        if mask_bit(mask, f) == 1:
            dx[f] = dout[f]
        else:
            dx[f] = zero


# ---------------------------------------------------------------- launchers: device arrays in, launched

def _blocks(n_threads):
    return max(1, math.ceil(n_threads / THREADS_PER_BLOCK))  # <= 2**31 - 1 up to 2.7e11 threads


def magic_number(dtype) -> float:
    """1.5 * 2**p (p the mantissa bits): (v + M) - M rounds v half to even in that dtype."""
    return 1.5 * 2 ** np.finfo(dtype).nmant


def fake_quant_forward_device(d_x, scale, qmin, qmax, d_out, d_mask):
    """Kernel 1 on flat device arrays: d_out (E,) and d_mask (ceil(E / 8),), one thread per byte."""
    dtype = d_x.dtype.type
    fake_quant_forward_kernel[_blocks(d_mask.size), THREADS_PER_BLOCK](
        d_x, dtype(scale), dtype(qmin), dtype(qmax), dtype(magic_number(d_x.dtype)), d_out, d_mask)


def fake_quant_backward_device(d_dout, d_mask, d_dx):
    """Kernel 2 on flat device arrays: d_dx (E,), one thread per element."""
    fake_quant_backward_kernel[_blocks(d_dx.size), THREADS_PER_BLOCK](d_dout, d_mask, d_dx, d_dx.dtype.type(0))


# ---------------------------------------------------------------- host functions: numpy in, out (either version)

def _launchers(launchers):
    """The module whose launchers run: this one (None), or version 2's, which calls these host
    functions with itself (kernels/straight_through_v2.py imports this module, not the reverse)."""
    return sys.modules[__name__] if launchers is None else launchers

def fake_quant_forward(x, scale, qmin, qmax, launchers=None):
    """(out, mask): out = scale * clip(round(x / scale), qmin, qmax), the shape of x;
    mask = np.packbits(((x / scale >= qmin) & (x / scale <= qmax)).ravel()), uint8.

    x: float array, any shape; scale > 0 the grid step; qmin <= qmax ints.
    """
    x = np.ascontiguousarray(x)
    precision = np.finfo(x.dtype).nmant  # p: 23 for float32, 52 for float64
    if max(abs(qmin), abs(qmax)) > 2 ** (precision - 1):
        raise ValueError(f"qmin and qmax must lie within +-2^{precision - 1} for {x.dtype} inputs")
    d_x = cuda.to_device(x.ravel())
    d_out = cuda.device_array(x.size, dtype=x.dtype)
    d_mask = cuda.device_array(math.ceil(x.size / 8), dtype=np.uint8)
    _launchers(launchers).fake_quant_forward_device(d_x, scale, qmin, qmax, d_out, d_mask)
    return d_out.copy_to_host().reshape(x.shape), d_mask.copy_to_host()


def fake_quant_backward(dout, mask, launchers=None):
    """dx, the shape of dout: dout where the forward's mask bit is 1, else 0.

    dout: float array, the shape of the forward's x; mask: uint8 (ceil(dout.size / 8),) from
    fake_quant_forward.
    """
    dout = np.ascontiguousarray(dout)
    d_dx = cuda.device_array(dout.size, dtype=dout.dtype)
    _launchers(launchers).fake_quant_backward_device(cuda.to_device(dout.ravel()),
                                                     cuda.to_device(np.ascontiguousarray(mask)), d_dx)
    return d_dx.copy_to_host().reshape(dout.shape)


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("straight_through"))
