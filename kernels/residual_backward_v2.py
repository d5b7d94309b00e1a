"""A stack of residual blocks, version 2: tiled products and the norms in two stages (issue 34).

Version 1 (kernels/residual_backward.py) teaches the plan: one thread per output entry, each
reading a row and a column straight from global memory, and each layer's norm one block with
a tree in shared memory. That reads every input 64 times more often than a tiled product
does, and its norms start 9 blocks at the benchmark's LARGE size, 1,152 threads for a GPU
that holds 270,336 (the static table predicts 1% of copy bandwidth). What changed:

  forward   1. hidden_forward_kernel: a = relu(h W1), the ReLU in the epilogue.
            2. output_forward_kernel: h' = skip * h + a W2, the identity in the epilogue.
  backward  3. hidden_backward_kernel: dz = (g W2^T) * [a > 0], W2^T read as W2 lies.
            4. input_backward_kernel: dh = skip * g + dz W1^T, W1^T read as W1 lies.
            5. dW1 = h^T dz and dW2 = a^T g: kernels/common/tiled_matmul.py's ``matmul`` with A^T read
               as A lies; few output tiles (8 x 32 at LARGE) and a long shared axis (the N
               rows) split over grid z, the partials added in a fixed order (split-K).
  norms     6. layer_partials_kernel: G blocks a layer (grid (G, L + 1)), 4 entries a thread in
               128-bit loads, the block's sum by warp shuffles (kernels/common/patterns.py's block_sum)
               into partials (L + 1, G); then sum_parts_kernel: a warp per layer adds its G
               partials, lanes then shuffles. No atomics: the same bits every run.

Kernels 1-4 are kernels/common/tiled_matmul.py's tile (``product_tile``: 64 x 64 outputs a block
through shared memory, 4 x 4 a thread in registers) and an epilogue of their own; the
identity stays one multiply-add there, as in version 1. Every index is an unsigned offset
into a flat array (kernels/common/patterns.py). What the static table predicts
(benchmarks/results/kernels_static.md): global loads only in the tile copies, no local
memory, no 64-bit division in a loop, at most 128 registers; the norms 128-bit loads and
half a million threads at LARGE.

``sum_parts_kernel`` is the second stage of any reduction in parts: question 22's gain
gradient (kernels/training_symptoms.py) uses it too.

Shapes as version 1: L blocks, N rows, D features, H hidden units; h, g, dh (N, D), W1 (D, H),
W2 (H, D), a, dz (N, H), dhs (L + 1, N, D), partials (L + 1, G). Tests:
tests/kernels/test_residual_backward_kernels.py (every test runs both versions).
"""
from __future__ import annotations

import math

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import VECTOR, WARP, aligned, block_sum, bounded_jit, load4, u64, warp_sum
from backprop_traps.kernels.common.tiled_matmul import BM, BN, R, T, THREADS, TILE_A, TILE_B, grid, matmul, product_tile

NORM_THREADS = 256         # kernel 6's block: whole warps (block_sum)
NORM_TARGET_BLOCKS = 2048  # kernel 6's blocks over all layers: 8 of 256 threads a multiprocessor, twice
PART_WARPS = 8             # sum_parts_kernel: block (32, 8), a warp an item


# ---- 1. + 2. one block, forward --------------------------------------------------------------

@bounded_jit(T * T, 2)  # at most 128 registers a thread
def hidden_forward_kernel(h, W1, a, n_rows, d, hid):
    # h: N*D, W1: D*H; a: N*H (written), a = relu(h W1); sizes u64. Grid (H / 64, N / 64 strided).
    a_tile = cuda.shared.array(TILE_A, h.dtype)
    b_tile = cuda.shared.array(TILE_B, h.dtype)
    acc = cuda.local.array((R, R), h.dtype)
    tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
    tid, zero = cuda.threadIdx.y * T + cuda.threadIdx.x, h.dtype.type(0)
    n0, m0 = u64(cuda.blockIdx.x * BN), u64(cuda.blockIdx.y * BM)
    while m0 < n_rows:                                    # the same for the whole block
        product_tile(acc, a_tile, b_tile, h, W1, False, False, n_rows, hid, u64(0), d, d, m0, n0, tid, tx, ty, zero)
        for i in range(R):
            m = m0 + ty + u64(16 * i)
            for j in range(R):
                n = n0 + tx + u64(16 * j)
                if m < n_rows and n < hid:
                    z = acc[i, j]
                    a[m * hid + n] = z if z > zero else zero
        m0 += u64(cuda.gridDim.y * BM)


@bounded_jit(T * T, 2)
def output_forward_kernel(h, a, W2, out, skip, n_rows, d, hid):
    # h: N*D, a: N*H, W2: H*D; out: N*D (written), out = skip * h + a W2; skip in h's dtype.
    a_tile = cuda.shared.array(TILE_A, h.dtype)
    b_tile = cuda.shared.array(TILE_B, h.dtype)
    acc = cuda.local.array((R, R), h.dtype)
    tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
    tid, zero = cuda.threadIdx.y * T + cuda.threadIdx.x, h.dtype.type(0)
    n0, m0 = u64(cuda.blockIdx.x * BN), u64(cuda.blockIdx.y * BM)
    while m0 < n_rows:
        product_tile(acc, a_tile, b_tile, a, W2, False, False, n_rows, d, u64(0), hid, hid, m0, n0, tid, tx, ty, zero)
        for i in range(R):
            m = m0 + ty + u64(16 * i)
            for j in range(R):
                n = n0 + tx + u64(16 * j)
                if m < n_rows and n < d:
                    out[m * d + n] = skip * h[m * d + n] + acc[i, j]
        m0 += u64(cuda.gridDim.y * BM)


# ---- 3. + 4. one block, backward -------------------------------------------------------------

@bounded_jit(T * T, 2)
def hidden_backward_kernel(g, a, W2, dz, n_rows, d, hid):
    # g: N*D, the gradient at the block's output; a: N*H; W2: H*D; dz: N*H (written),
    # dz = (g W2^T) * [a > 0]. Grid (H / 64, N / 64 strided).
    a_tile = cuda.shared.array(TILE_A, g.dtype)
    b_tile = cuda.shared.array(TILE_B, g.dtype)
    acc = cuda.local.array((R, R), g.dtype)
    tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
    tid, zero = cuda.threadIdx.y * T + cuda.threadIdx.x, g.dtype.type(0)
    n0, m0 = u64(cuda.blockIdx.x * BN), u64(cuda.blockIdx.y * BM)
    while m0 < n_rows:
        product_tile(acc, a_tile, b_tile, g, W2, False, True, n_rows, hid, u64(0), d, d, m0, n0, tid, tx, ty, zero)
        for i in range(R):
            m = m0 + ty + u64(16 * i)
            for j in range(R):
                n = n0 + tx + u64(16 * j)
                if m < n_rows and n < hid:
                    f = m * hid + n
                    dz[f] = acc[i, j] if a[f] > zero else zero   # relu' is 0 at z <= 0
        m0 += u64(cuda.gridDim.y * BM)


@bounded_jit(T * T, 2)
def input_backward_kernel(g, dz, W1, dh, skip, n_rows, d, hid):
    # g: N*D; dz: N*H; W1: D*H; dh: N*D (written), dh = skip * g + dz W1^T. Grid (D / 64, N / 64).
    a_tile = cuda.shared.array(TILE_A, g.dtype)
    b_tile = cuda.shared.array(TILE_B, g.dtype)
    acc = cuda.local.array((R, R), g.dtype)
    tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
    tid, zero = cuda.threadIdx.y * T + cuda.threadIdx.x, g.dtype.type(0)
    n0, m0 = u64(cuda.blockIdx.x * BN), u64(cuda.blockIdx.y * BM)
    while m0 < n_rows:
        product_tile(acc, a_tile, b_tile, dz, W1, False, True, n_rows, d, u64(0), hid, hid, m0, n0, tid, tx, ty, zero)
        for i in range(R):
            m = m0 + ty + u64(16 * i)
            for j in range(R):
                n = n0 + tx + u64(16 * j)
                if m < n_rows and n < d:
                    dh[m * d + n] = skip * g[m * d + n] + acc[i, j]  # the identity: g, once
        m0 += u64(cuda.gridDim.y * BM)


# ---- 6. the per-layer sums of squares, in two stages -----------------------------------------

@cuda.jit
def layer_partials_kernel(dhs, per_layer, layers, partials):
    # dhs: (L+1)*per_layer, flat; per_layer, layers: u64; partials: (L+1)*G (written): block
    # (g, l) sums the squares of its share of layer l. Grid (G, L + 1 strided past 65,535).
    shared = cuda.shared.array(WARP, dhs.dtype)
    tid = cuda.threadIdx.x
    g, blocks = u64(cuda.blockIdx.x), u64(cuda.gridDim.x)
    zero = dhs.dtype.type(0)
    step = blocks * u64(NORM_THREADS * VECTOR)
    layer = u64(cuda.blockIdx.y)
    while layer < layers:                                 # the same for the whole block
        start = layer * per_layer
        stop = start + per_layer
        body = min((start + u64(3)) // u64(VECTOR) * u64(VECTOR), stop)  # the layer's first 16-byte boundary
        end = max(body, stop // u64(VECTOR) * u64(VECTOR))               # and its last
        acc = zero
        i = body + (g * u64(NORM_THREADS) + u64(tid)) * u64(VECTOR)
        while i < end:
            v0, v1, v2, v3 = load4(dhs, i)                # one 128-bit load (two in float64)
            acc += v0 * v0 + v1 * v1 + v2 * v2 + v3 * v3
            i += step
        if g == 0:                                        # the < 4 entries before body, and after end
            if start + u64(tid) < body:
                v = dhs[start + u64(tid)]
                acc += v * v
            if end + u64(tid) < stop:
                v = dhs[end + u64(tid)]
                acc += v * v
        acc = block_sum(shared, acc, zero, tid, NORM_THREADS)
        if tid == 0:
            partials[layer * blocks + g] = acc
        layer += u64(cuda.gridDim.y)


@cuda.jit
def sum_parts_kernel(partials, parts, items, item_stride, part_stride, out):
    # partials: flat; parts, items, strides: u64; out: items (written), out[i] = the sum over
    # p < parts of partials[i * item_stride + p * part_stride]. Block (32, 8): warp w adds item
    # blockIdx.x * 8 + w, lane l the parts l, l + 32, ..., then shuffles: a fixed order.
    lane = u64(cuda.threadIdx.x)
    item = u64(cuda.blockIdx.x) * u64(PART_WARPS) + u64(cuda.threadIdx.y)
    acc = partials.dtype.type(0)
    if item < items:                                      # the same for the whole warp
        for p in range(lane, parts, u64(WARP)):
            acc += partials[item * item_stride + p * part_stride]
    acc = warp_sum(acc)                                   # every lane of the warp calls it
    if lane == 0 and item < items:
        out[item] = acc


# ---- launchers: device arrays in, launched ---------------------------------------------------

def _flat(a):
    return a.reshape(a.size)


def hidden_forward_device(d_h, d_W1, d_a):
    """Kernel 1: d_a (N, H) = relu(h @ W1), from d_h (N, D) and d_W1 (D, H)."""
    (n, d), hid = d_h.shape, d_W1.shape[1]
    hidden_forward_kernel[grid(n, hid), THREADS](_flat(d_h), _flat(d_W1), _flat(d_a), u64(n), u64(d), u64(hid))


def output_forward_device(d_h, d_a, d_W2, skip, d_out):
    """Kernel 2: d_out (N, D) = skip * h + a @ W2, from d_a (N, H) and d_W2 (H, D)."""
    (n, d), hid = d_h.shape, d_a.shape[1]
    output_forward_kernel[grid(n, d), THREADS](_flat(d_h), _flat(d_a), _flat(d_W2), _flat(d_out),
                                               d_h.dtype.type(skip), u64(n), u64(d), u64(hid))


def hidden_backward_device(d_g, d_a, d_W2, d_dz):
    """Kernel 3: d_dz (N, H) = (g @ W2^T) * [a > 0], from d_g (N, D)."""
    (n, d), hid = d_g.shape, d_a.shape[1]
    hidden_backward_kernel[grid(n, hid), THREADS](_flat(d_g), _flat(d_a), _flat(d_W2), _flat(d_dz),
                                                  u64(n), u64(d), u64(hid))


def input_backward_device(d_g, d_dz, d_W1, skip, d_dh):
    """Kernel 4: d_dh (N, D) = skip * g + dz @ W1^T, from d_dz (N, H) and d_W1 (D, H)."""
    (n, d), hid = d_g.shape, d_dz.shape[1]
    input_backward_kernel[grid(n, d), THREADS](_flat(d_g), _flat(d_dz), _flat(d_W1), _flat(d_dh),
                                               d_g.dtype.type(skip), u64(n), u64(d), u64(hid))


def weight_grad_device(d_A, d_B, d_dW, d_scratch=None):
    """5: d_dW (R, C) = A^T B from d_A (N, R) and d_B (N, C), A^T read as A lies; d_scratch:
    tiled_matmul.scratch(R, C, N), for a product it splits over the rows (allocated when None)."""
    matmul(d_A, d_B, d_dW, d_scratch, a_transposed=True)


def block_forward_device(d_h, d_W1, d_W2, skip, d_a, d_out):
    """One block's forward, kernels 1 and 2: d_a (N, H), and d_out (N, D) its output."""
    hidden_forward_device(d_h, d_W1, d_a)
    output_forward_device(d_h, d_a, d_W2, skip, d_out)


def block_backward_device(d_g, d_h, d_a, d_W1, d_W2, skip, d_dz, d_dh, d_dW1, d_dW2, d_scratch1=None,
                          d_scratch2=None):
    """One block's backward, as version 1's: kernels 3 and 4 write d_dz (N, H) and d_dh (N, D);
    5 writes d_dW1 (D, H) = h^T dz and d_dW2 (H, D) = a^T g, through d_scratch1 and d_scratch2
    (tiled_matmul.scratch(D, H, N) and (H, D, N)) when they split."""
    hidden_backward_device(d_g, d_a, d_W2, d_dz)
    input_backward_device(d_g, d_dz, d_W1, skip, d_dh)
    weight_grad_device(d_h, d_dz, d_dW1, d_scratch1)
    weight_grad_device(d_a, d_g, d_dW2, d_scratch2)


def norm_blocks(layers: int, per_layer: int) -> int:
    """G, kernel 6's blocks a layer: NORM_TARGET_BLOCKS in all, each thread at least 4 loads."""
    return max(1, min(math.ceil(NORM_TARGET_BLOCKS / layers), math.ceil(per_layer / (NORM_THREADS * VECTOR * 4))))


def sum_parts_device(d_partials, parts, items, item_stride, part_stride, d_out):
    """d_out (items,) = the sums of d_partials' parts (``sum_parts_kernel``)."""
    sum_parts_kernel[max(1, math.ceil(items / PART_WARPS)), (WARP, PART_WARPS)](
        _flat(d_partials), u64(parts), u64(items), u64(item_stride), u64(part_stride), d_out)


def layer_sum_squares_device(d_dhs, d_sums, d_partials=None):
    """Kernel 6: d_sums (L + 1,), each layer's sum of squares of d_dhs (L + 1, ...), through
    d_partials (L + 1, G) (``norm_blocks``; allocated here when None). d_dhs 16-byte aligned."""
    if not aligned(d_dhs):
        raise ValueError("the norms read 4 entries at a time: dhs must start on a 16-byte boundary")
    layers = d_dhs.shape[0]
    per_layer = d_dhs.size // layers
    if d_partials is None:
        d_partials = cuda.device_array((layers, norm_blocks(layers, per_layer)), dtype=d_dhs.dtype)
    blocks = d_partials.shape[1]
    layer_partials_kernel[(blocks, min(layers, MAX_GRID[1])), NORM_THREADS](
        _flat(d_dhs), u64(per_layer), u64(layers), _flat(d_partials))
    sum_parts_device(d_partials, blocks, layers, blocks, 1, d_sums)
