"""Max and average pooling, version 2: flat arrays, unsigned offsets, no division (issue 34).

Version 1 (kernels/routing_trap.py) is the one to read first: one thread per element, a
(N, C, H, W) index unravelled with four 64-bit divisions and modulos, Numba's signed 4-D
indexing on every load. Issue 34 measured it on an H200: its inference max-pool was slower
than PyTorch's training max-pool (indices included), and its gather backward, which reads
argmax about four times per input, ran at 5% of copy bandwidth. What changed:

  - a 3-D grid, (32, 8) threads along (w, h) of a plane and planes n * C + c along z (strided
    past 65,535): no thread divides to find its element;
  - flat arrays indexed with unsigned offsets (``plane * H * W + h * W + w``, kernels/common/patterns.py):
    one add and one load each, no stride arithmetic, no negative-index check. The issue's own
    trial of this alone took the training forward from 0.63x to 1.06x PyTorch;
  - the window (k, s) is compiled in (``pool_kernels``), so its loops unroll;
  - the gather backward takes a CELL of s x s inputs a thread, not one input: the windows that
    cover a cell are the same for all its inputs, so each of their argmax entries is read once
    a cell (at k3 s2: 4 for 4 inputs, not 2.25 an input plus a division to decode each), and
    the thread adds dout into the cell's s x s accumulators (registers) where argmax falls.

The inference forward reads x as the training forward does and writes only the values, no
int64 index: at k3 s2, 16 B read and 4 B written an output, against 16 + 12: the seed's
trade-off, 1.4x fewer bytes. The atomic scatter is version 1's with the same indexing.

What the static table predicts (benchmarks/results/kernels_static.md): no 64-bit division
(version 1: 3 to 7 an element), about one argmax read an input in the gather (version 1:
1.67 with its re-reads), 32-bit loads of x (the windows overlap, so no 128-bit ones).

Shapes as version 1: x, dx (N, C, H, W); out, dout, argmax (N, C, Ho, Wo), argmax the flat
h * W + w inside its plane (int64). The kernels take them flat with their sizes as u64.
Tests: tests/kernels/test_routing_trap_kernels.py.
"""
from __future__ import annotations

import functools
import math

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import i64, u64

BLOCK = (32, 8)   # threads along (w, h) of a plane


@functools.lru_cache(maxsize=None)
def pool_kernels(kernel_size: int, stride: int):
    """The kernels for one window, K = kernel_size and S = stride compiled in:
    (max inference forward, max forward + argmax, max gather backward, avg forward, avg backward)."""
    K, S = kernel_size, stride
    UK, US = u64(K), u64(S)
    NW = (K - 1) // S + 1          # windows covering a cell, along each axis

    @cuda.jit
    def maxpool2d_forward_inference_kernel(x, out, H, W, Ho, Wo, planes):
        # x: N*C*H*W, out: N*C*Ho*Wo (flat); sizes u64. Thread (wo, ho) of plane z, + gridDim.z ...
        wo, ho = u64(cuda.grid(2)[0]), u64(cuda.grid(2)[1])
        if wo >= Wo or ho >= Ho:
            return
        plane = u64(cuda.blockIdx.z)
        while plane < planes:
            top = plane * H * W + ho * US * W + wo * US    # the window's first input
            best = x[top]
            for i in range(UK):
                for j in range(UK):
                    v = x[top + i * W + j]
                    if v > best:
                        best = v
            out[(plane * Ho + ho) * Wo + wo] = best
            plane += u64(cuda.gridDim.z)

    @cuda.jit
    def maxpool2d_forward_kernel(x, out, argmax, H, W, Ho, Wo, planes):
        # as above, and argmax: N*C*Ho*Wo int64, h * W + w of the first maximum (row-major)
        wo, ho = u64(cuda.grid(2)[0]), u64(cuda.grid(2)[1])
        if wo >= Wo or ho >= Ho:
            return
        plane = u64(cuda.blockIdx.z)
        while plane < planes:
            h0, w0 = ho * US, wo * US
            top = plane * H * W + h0 * W + w0
            best, where = x[top], h0 * W + w0
            for i in range(UK):
                for j in range(UK):
                    v = x[top + i * W + j]
                    if v > best:                           # strictly: a later tie keeps the first
                        best, where = v, (h0 + i) * W + w0 + j
            at = (plane * Ho + ho) * Wo + wo
            out[at], argmax[at] = best, i64(where)
            plane += u64(cuda.gridDim.z)

    @cuda.jit
    def maxpool2d_backward_gather_kernel(dout, argmax, dx, H, W, Ho, Wo, planes):
        # dout, argmax: N*C*Ho*Wo; dx: N*C*H*W (written, every element). Thread (b, a) of plane z
        # owns the cell of inputs rows a*S .. a*S + S - 1, columns b*S .. b*S + S - 1.
        b, a = u64(cuda.grid(2)[0]), u64(cuda.grid(2)[1])
        if b * US >= W or a * US >= H:
            return
        acc = cuda.local.array((S, S), dx.dtype)           # registers: S is a constant
        corner = i64(a * US * W + b * US)                  # the cell's first input, h * W + w
        plane = u64(cuda.blockIdx.z)
        while plane < planes:
            for r in range(S):
                for c in range(S):
                    acc[r, c] = dx.dtype.type(0)
            for p in range(NW):                            # the windows that cover the cell
                for q in range(NW):
                    oh, ow = i64(a) - (NW - 1) + p, i64(b) - (NW - 1) + q
                    if 0 <= oh < i64(Ho) and 0 <= ow < i64(Wo):
                        at = (plane * Ho + u64(oh)) * Wo + u64(ow)
                        d, g = argmax[at] - corner, dout[at]  # its maximum, from the cell's corner
                        for r in range(S):
                            for c in range(S):             # constant indices: acc stays in registers
                                if d == i64(r) * i64(W) + c:
                                    acc[r, c] += g
            for r in range(S):
                for c in range(S):
                    h, w = a * US + u64(r), b * US + u64(c)
                    if h < H and w < W:
                        dx[(plane * H + h) * W + w] = acc[r, c]
            plane += u64(cuda.gridDim.z)

    @cuda.jit
    def avgpool2d_forward_kernel(x, out, inv_area, H, W, Ho, Wo, planes):
        # as the max forward; out = the window's sum * inv_area (1 / (k * k) in x's dtype)
        wo, ho = u64(cuda.grid(2)[0]), u64(cuda.grid(2)[1])
        if wo >= Wo or ho >= Ho:
            return
        plane = u64(cuda.blockIdx.z)
        while plane < planes:
            top = plane * H * W + ho * US * W + wo * US
            acc = x.dtype.type(0)
            for i in range(UK):
                for j in range(UK):
                    acc += x[top + i * W + j]
            out[(plane * Ho + ho) * Wo + wo] = acc * inv_area
            plane += u64(cuda.gridDim.z)

    @cuda.jit
    def avgpool2d_backward_kernel(dout, dx, inv_area, H, W, Ho, Wo, planes):
        # dout: N*C*Ho*Wo; dx: N*C*H*W (written). A cell of S x S inputs a thread, as the max
        # gather: each covering window's dout read once, added to the inputs it covers.
        b, a = u64(cuda.grid(2)[0]), u64(cuda.grid(2)[1])
        if b * US >= W or a * US >= H:
            return
        acc = cuda.local.array((S, S), dx.dtype)
        plane = u64(cuda.blockIdx.z)
        while plane < planes:
            for r in range(S):
                for c in range(S):
                    acc[r, c] = dx.dtype.type(0)
            for p in range(NW):
                for q in range(NW):
                    oh, ow = i64(a) - (NW - 1) + p, i64(b) - (NW - 1) + q
                    if 0 <= oh < i64(Ho) and 0 <= ow < i64(Wo):
                        g = dout[(plane * Ho + u64(oh)) * Wo + u64(ow)]
                        for r in range(S):                 # window (oh, ow) covers rows oh*S .. oh*S + K - 1
                            for c in range(S):
                                dr, dc = i64(a) * S + r - oh * S, i64(b) * S + c - ow * S
                                if 0 <= dr < K and 0 <= dc < K:
                                    acc[r, c] += g
            for r in range(S):
                for c in range(S):
                    h, w = a * US + u64(r), b * US + u64(c)
                    if h < H and w < W:
                        dx[(plane * H + h) * W + w] = acc[r, c] * inv_area
            plane += u64(cuda.gridDim.z)

    return (maxpool2d_forward_inference_kernel, maxpool2d_forward_kernel, maxpool2d_backward_gather_kernel,
            avgpool2d_forward_kernel, avgpool2d_backward_kernel)


@cuda.jit
def maxpool2d_backward_scatter_kernel(dout, argmax, dx, H, W, Ho, Wo, planes):
    # dout, argmax: N*C*Ho*Wo; dx: N*C*H*W, zeroed before: one thread an output adds its dout
    # into the input its argmax names, atomically (version 1's kernel 4, indexed as above).
    wo, ho = u64(cuda.grid(2)[0]), u64(cuda.grid(2)[1])
    if wo >= Wo or ho >= Ho:
        return
    plane = u64(cuda.blockIdx.z)
    while plane < planes:
        at = (plane * Ho + ho) * Wo + wo
        cuda.atomic.add(dx, plane * H * W + u64(argmax[at]), dout[at])
        plane += u64(cuda.gridDim.z)


# ---- launchers: device arrays in, launched ------------------------------------------------

def _grid(width: int, height: int, planes: int) -> tuple[int, int, int]:
    """(w blocks, h blocks, planes) for BLOCK: planes capped at 65,535 (the kernels stride on)."""
    return (max(1, math.ceil(width / BLOCK[0])), max(1, math.ceil(height / BLOCK[1])),
            max(1, min(planes, MAX_GRID[2])))


def _sizes(d_big, d_small):
    """(planes, H, W, Ho, Wo) of an (N, C, H, W) array and its pooled (N, C, Ho, Wo) one, as u64."""
    N, C, H, W = d_big.shape
    return N * C, H, W, d_small.shape[2], d_small.shape[3]


def _flat(a):
    return a.reshape(a.size)


def _launch(kernel, width, height, d_big, d_small, *arrays_then_scalars):
    planes, H, W, Ho, Wo = _sizes(d_big, d_small)
    kernel[_grid(width, height, planes), BLOCK](*arrays_then_scalars, u64(H), u64(W), u64(Ho), u64(Wo), u64(planes))


def maxpool2d_forward_inference_device(d_x, d_out, k, s):
    """Inference forward: d_out (N, C, Ho, Wo), values only."""
    _launch(pool_kernels(k, s)[0], d_out.shape[3], d_out.shape[2], d_x, d_out, _flat(d_x), _flat(d_out))


def maxpool2d_forward_device(d_x, d_out, d_argmax, k, s):
    """Training forward: d_out and d_argmax (int64), both (N, C, Ho, Wo)."""
    _launch(pool_kernels(k, s)[1], d_out.shape[3], d_out.shape[2], d_x, d_out, _flat(d_x), _flat(d_out),
            _flat(d_argmax))


def maxpool2d_backward_device(d_dout, d_argmax, d_dx, k, s):
    """Gather backward: d_dx (N, C, H, W), every element written, a cell of s x s a thread."""
    _, _, H, W = d_dx.shape
    _launch(pool_kernels(k, s)[2], math.ceil(W / s), math.ceil(H / s), d_dx, d_dout, _flat(d_dout),
            _flat(d_argmax), _flat(d_dx))


def maxpool2d_backward_atomic_device(d_dout, d_argmax, d_dx):
    """Scatter backward: adds into d_dx, which must start at zero."""
    _launch(maxpool2d_backward_scatter_kernel, d_dout.shape[3], d_dout.shape[2], d_dx, d_dout, _flat(d_dout),
            _flat(d_argmax), _flat(d_dx))


def avgpool2d_forward_device(d_x, d_out, k, s):
    """Average forward: d_out (N, C, Ho, Wo)."""
    _launch(pool_kernels(k, s)[3], d_out.shape[3], d_out.shape[2], d_x, d_out, _flat(d_x), _flat(d_out),
            d_x.dtype.type(1.0 / (k * k)))


def avgpool2d_backward_device(d_dout, d_dx, k, s):
    """Average backward: d_dx (N, C, H, W), every element written, a cell of s x s a thread."""
    _, _, H, W = d_dx.shape
    _launch(pool_kernels(k, s)[4], math.ceil(W / s), math.ceil(H / s), d_dx, d_dout, _flat(d_dout), _flat(d_dx),
            d_dout.dtype.type(1.0 / (k * k)))
