"""Fake quantisation with a straight-through backward, in Numba CUDA, version 2.

Version 1 (kernels/straight_through.py) is the one to read first: a thread per mask byte
computes its 8 elements one by one in the forward, a thread per element in the backward.
Issue 34 measured that forward at 21% of copy bandwidth on an H200. What changed is below
("Why they are fast"); the rounding, the NaN rule, the mask's bit order, ``magic_number`` and
the host functions are version 1's (these launchers run under them).

Kernels, forward directly above backward:
  1. fake_quant_forward_kernel: out = scale * clip(round(x / scale), qmin, qmax), fused with a
     BIT-PACKED in-range mask, bit = 1 where qmin <= x / scale <= qmax (both ends included).
     A thread takes a mask byte at a time and computes the 8 elements that byte covers, so
     every byte has a single writer: no atomics.
  2. fake_quant_backward_kernel: the straight-through estimator, dx = dout where the mask bit
     is 1 and 0 elsewhere, a byte's 8 elements at a time; it reads dout and the mask, never x.

Why they are fast (issue 34 measured the first forward at 21% of copy bandwidth): a thread
reads its 8 neighbouring elements in two 128-bit loads and writes them in two 128-bit stores,
so a warp moves 1 KB of contiguous memory an instruction pair (the first forward read 8
elements one by one, a warp's loads 32 bytes apart, each load a scattered request). Both
kernels stride over the bytes with a grid sized to fill the GPU (a grid-stride loop, no
division to count its steps) and take the last, partial byte element by element.
What the static table predicts (benchmarks/results/kernels_static.md): 128-bit loads in the
loop, no 64-bit division. The arrays must start on a 16-byte boundary (the launchers check).

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

Check and time both versions: python -m backprop_traps.kernels.straight_through (from any folder) runs them on the
benchmark's tiny cases in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""

import math
import sys

from backprop_traps.kernels import straight_through as v1
from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.straight_through import magic_number
from backprop_traps.kernels.common.patterns import aligned, load4, store4, u64

THREADS_PER_BLOCK = 256
MAX_BLOCKS = 132 * 16    # a grid that fills an H100 or H200 (8 blocks of 256 a multiprocessor), twice


# ---------------------------------------------------------------- device helpers

@cuda.jit(device=True)
def quantise(value, scale, lo, hi, magic):
    """(scale * clip(round(value / scale), lo, hi), 1 if lo <= value / scale <= hi else 0)."""
    u = value / scale  # grid units, before rounding
    inside = 1 if lo <= u and u <= hi else 0
    if u != u:  # NaN in, NaN out, bit 0: the same on every target
        return u, inside
    v = min(max(u, lo), hi)
    return ((v + magic) - magic) * scale, inside  # rounded half to even, in x's dtype


# ---------------------------------------------------------------- 1. forward + packed mask

@cuda.jit
def fake_quant_forward_kernel(x, size, scale, lo, hi, magic, out, mask):
    """x (E,) -> out (E,), mask uint8 (ceil(E / 8),); size = E as u64; lo, hi = qmin, qmax and
    magic = M, in x's dtype."""
    byte, stride = u64(cuda.grid(1)), u64(cuda.gridsize(1))
    full = size // u64(8)                               # bytes whose 8 elements all exist
    while byte < full:
        f = byte * u64(8)
        x0, x1, x2, x3 = load4(x, f)                    # two 128-bit loads: 8 neighbours
        x4, x5, x6, x7 = load4(x, f + u64(4))
        o0, b0 = quantise(x0, scale, lo, hi, magic)
        o1, b1 = quantise(x1, scale, lo, hi, magic)
        o2, b2 = quantise(x2, scale, lo, hi, magic)
        o3, b3 = quantise(x3, scale, lo, hi, magic)
        o4, b4 = quantise(x4, scale, lo, hi, magic)
        o5, b5 = quantise(x5, scale, lo, hi, magic)
        o6, b6 = quantise(x6, scale, lo, hi, magic)
        o7, b7 = quantise(x7, scale, lo, hi, magic)
        store4(out, f, o0, o1, o2, o3)
        store4(out, f + u64(4), o4, o5, o6, o7)
        mask[byte] = (b0 << 7) | (b1 << 6) | (b2 << 5) | (b3 << 4) | (b4 << 3) | (b5 << 2) | (b6 << 1) | b7
        byte += stride
    if byte == full and full * u64(8) < size:           # the partial last byte: one thread, element by element
        bits = 0
        for t in range(8):                              # a constant count: unrolled, no loop left
            f = full * u64(8) + u64(t)
            if f < size:
                out[f], inside = quantise(x[f], scale, lo, hi, magic)
                bits |= inside << (7 - t)
        mask[full] = bits


# ---------------------------------------------------------------- 2. backward: the STE

@cuda.jit(device=True)
def passed(g, bits, t, zero):
    """g where bit t (from the top) of the mask byte is set, else zero."""
    return g if (bits >> (7 - t)) & 1 else zero


@cuda.jit
def fake_quant_backward_kernel(dout, mask, size, dx, zero):
    """dout (E,), mask uint8 (ceil(E / 8),), size = E as u64 -> dx (E,): dout where the bit is
    set, else 0; a mask byte's 8 elements at a time."""
    byte, stride = u64(cuda.grid(1)), u64(cuda.gridsize(1))
    full = size // u64(8)
    while byte < full:
        f, bits = byte * u64(8), mask[byte]
        g0, g1, g2, g3 = load4(dout, f)
        g4, g5, g6, g7 = load4(dout, f + u64(4))
        store4(dx, f, passed(g0, bits, 0, zero), passed(g1, bits, 1, zero), passed(g2, bits, 2, zero),
               passed(g3, bits, 3, zero))
        store4(dx, f + u64(4), passed(g4, bits, 4, zero), passed(g5, bits, 5, zero), passed(g6, bits, 6, zero),
               passed(g7, bits, 7, zero))
        byte += stride
    if byte == full and full * u64(8) < size:           # the partial last byte
        bits = mask[full]
        for t in range(8):
            f = full * u64(8) + u64(t)
            if f < size:
                dx[f] = passed(dout[f], bits, t, zero)


# ---------------------------------------------------------------- launchers: device arrays in, launched

def _blocks(n_bytes):
    return max(1, min(math.ceil(n_bytes / THREADS_PER_BLOCK), MAX_BLOCKS))


def _check(*arrays):
    if not aligned(*arrays):
        raise ValueError("the fake-quant kernels read 8 elements in two 128-bit loads: the arrays must "
                         "start on a 16-byte boundary")


def fake_quant_forward_device(d_x, scale, qmin, qmax, d_out, d_mask):
    """Kernel 1 on flat device arrays: d_out (E,) and d_mask (ceil(E / 8),)."""
    _check(d_x, d_out)
    dtype = d_x.dtype.type
    fake_quant_forward_kernel[_blocks(d_mask.size), THREADS_PER_BLOCK](
        d_x, u64(d_x.size), dtype(scale), dtype(qmin), dtype(qmax), dtype(magic_number(d_x.dtype)), d_out, d_mask)


def fake_quant_backward_device(d_dout, d_mask, d_dx):
    """Kernel 2 on flat device arrays: d_dx (E,)."""
    _check(d_dout, d_dx)
    fake_quant_backward_kernel[_blocks(d_mask.size), THREADS_PER_BLOCK](
        d_dout, d_mask, u64(d_dx.size), d_dx, d_dx.dtype.type(0))


# ---------------------------------------------------------------- host functions: version 1's, on these launchers

def fake_quant_forward(x, scale, qmin, qmax):
    return v1.fake_quant_forward(x, scale, qmin, qmax, launchers=sys.modules[__name__])


def fake_quant_backward(dout, mask):
    return v1.fake_quant_backward(dout, mask, launchers=sys.modules[__name__])
