"""The block that starts as the identity, version 2: tiled products, the gain in the tile's
epilogue, the gain's gradient in one pass (issue 34). out = h + gain * relu(h @ W1) @ W2.

What changed from version 1 (kernels/training_symptoms.py, the one to read first: question
21's one-thread-per-output products plus the gain). The static table predicts version 1's
products compute-bound one-thread-per-output loops, its gain gradient D = 512 threads for a GPU
that holds 270,336, and its dout * gain a 64-bit modulo an element. Here:
  forward   1. residual_backward_v2.hidden_forward_kernel: a = relu(h @ W1), tiled.
            2. gated_output_tiled_kernel: kernels/common/tiled_matmul.py's tile of a @ W2, then
               f and out = h + gain * f in the epilogue.
  backward  3.+4. gain_partials_kernel: ONE pass over dout and f writes g = dout * gain and each
               part's column sums of dout * f: the rows in P parts (grid y), 4 channels a thread
               in 128-bit loads, gain's 4 held in registers (no modulo: a thread keeps its
               channels), a part's 8 lanes added by XOR shuffles; then
               residual_backward_v2.sum_parts_kernel adds the P parts, a warp a channel, in a
               fixed order.
            5.-7. question 21's version 2: dz, dh = dout + dz @ W1^T, dW1 = h^T dz, dW2 = a^T g
               (tiled; the weight gradients split over the rows).
Version 2 reads 4 channels at once: D must be a multiple of 4 and the arrays 16-byte aligned
(the launcher checks; version 1 takes any D).

The launchers take device arrays in their natural shapes and only launch, as version 1's; the
host functions are version 1's with ``version=2`` (kernels/training_symptoms.py). The tests run
both versions: NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_training_symptoms_kernels.py

Shapes as version 1: N rows, D channels, H hidden units; h, dout, out, f, g, dh (N, D); W1 (D, H);
W2 (H, D); a, dz (N, H); gain, dgain (D,); the gain's partials (P, D). Flat and C-ordered inside
the kernels; math in h's dtype.
"""
from __future__ import annotations

import math

from backprop_traps.kernels import residual_backward_v2 as rb2
from backprop_traps.kernels.common.patterns import FULL_MASK, VECTOR, aligned, bounded_jit, load4, store4, u64
from backprop_traps.kernels.common.tiled_matmul import BM, BN, R, T, TILE_A, TILE_B, THREADS, grid, product_tile
from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID

LANES, GROUPS = 8, 32     # gain_partials_kernel's block: 8 lanes of rows by 32 groups of 4 channels
ROWS_PER_LANE = 8         # at least, so a part is 64 rows or more
MAX_PARTS = 256           # P at most: the second stage adds P values a channel


# 2. the gated output, tiled ---------------------------------------------------------------------
@bounded_jit(T * T, 2)  # at most 128 registers a thread
def gated_output_tiled_kernel(h, a, W2, gain, f, out, n_rows, d, hid):
    # h: N*D; a: N*H; W2: H*D; gain: D; f, out: N*D (written), f = a @ W2, out = h + gain * f;
    # sizes u64. Grid (D / 64, N / 64 strided): the tile, then the gain in the epilogue.
    a_tile = cuda.shared.array(TILE_A, h.dtype)
    b_tile = cuda.shared.array(TILE_B, h.dtype)
    acc = cuda.local.array((R, R), h.dtype)
    tx, ty = u64(cuda.threadIdx.x), u64(cuda.threadIdx.y)
    tid, zero = cuda.threadIdx.y * T + cuda.threadIdx.x, h.dtype.type(0)
    n0, m0 = u64(cuda.blockIdx.x * BN), u64(cuda.blockIdx.y * BM)
    while m0 < n_rows:                                    # the same for the whole block
        product_tile(acc, a_tile, b_tile, a, W2, False, False, n_rows, d, u64(0), hid, hid, m0, n0, tid, tx, ty, zero)
        for i in range(R):
            m = m0 + ty + u64(16 * i)
            for j in range(R):
                n = n0 + tx + u64(16 * j)
                if m < n_rows and n < d:
                    e = m * d + n
                    f[e] = acc[i, j]
                    out[e] = h[e] + gain[n] * acc[i, j]
        m0 += u64(cuda.gridDim.y * BM)


# 3. + 4. the gain's gradient and dout * gain in one pass --------------------------------------
@cuda.jit(device=True)
def lane_sum(value):
    """The sum over a channel group's 8 lanes (8 consecutive threads of a warp), in each of them:
    XOR shuffles 4, 2, 1. Every thread of the warp must call it."""
    mask = LANES // 2
    while mask > 0:
        value += cuda.shfl_xor_sync(FULL_MASK, value, mask)
        mask //= 2
    return value


@cuda.jit
def gain_partials_kernel(dout, f, gain, g, n_rows, d, rows_per_part, partials):
    # dout, f: N*D; gain: D; g: N*D (written) = dout * gain; partials: P*D (written), part p's
    # column sums of dout * f; sizes u64. Grid (D / 128, P), block (8, 32): thread (l, t) walks
    # rows l, l + 8, ... of part blockIdx.y in channels j .. j + 3: a warp reads 4 groups x
    # 16 contiguous bytes of 8 rows, whole 32-byte sectors.
    lane = u64(cuda.threadIdx.x)
    j = (u64(cuda.blockIdx.x) * u64(GROUPS) + u64(cuda.threadIdx.y)) * u64(VECTOR)
    p = u64(cuda.blockIdx.y)
    zero = dout.dtype.type(0)
    s0, s1, s2, s3 = zero, zero, zero, zero
    if j < d:
        k0, k1, k2, k3 = load4(gain, j)                   # this thread's channels: no index arithmetic
        first = p * rows_per_part
        for row in range(first + lane, min(first + rows_per_part, n_rows), u64(LANES)):
            e = row * d + j
            o0, o1, o2, o3 = load4(dout, e)               # one 128-bit load each
            f0, f1, f2, f3 = load4(f, e)
            store4(g, e, o0 * k0, o1 * k1, o2 * k2, o3 * k3)
            s0, s1, s2, s3 = s0 + o0 * f0, s1 + o1 * f1, s2 + o2 * f2, s3 + o3 * f3
    s0, s1, s2, s3 = lane_sum(s0), lane_sum(s1), lane_sum(s2), lane_sum(s3)
    if lane == 0 and j < d:
        store4(partials, p * d + j, s0, s1, s2, s3)


# launchers: device arrays in, launched -----------------------------------------------------------
def gain_parts(n_rows: int) -> int:
    """P, version 2's parts of the rows: at least LANES * ROWS_PER_LANE rows each, at most MAX_PARTS."""
    return max(1, min(MAX_PARTS, math.ceil(n_rows / (LANES * ROWS_PER_LANE)), MAX_GRID[1]))


def gated_forward_device(d_h, d_W1, d_W2, d_gain, d_a, d_f, d_out):
    """Kernels 1 and 2, tiled: d_a (N, H), d_f (N, D) and d_out (N, D)."""
    (N, D), H = d_h.shape, d_W1.shape[1]
    rb2.hidden_forward_device(d_h, d_W1, d_a)
    gated_output_tiled_kernel[grid(N, D), THREADS](d_h.ravel(), d_a.ravel(), d_W2.ravel(), d_gain, d_f.ravel(),
                                                        d_out.ravel(), u64(N), u64(D), u64(H))


def gated_backward_device(d_dout, d_h, d_a, d_f, d_W1, d_W2, d_gain, d_dgain, d_g, d_dz, d_dh, d_dW1, d_dW2,
                          d_partials=None, d_scratch1=None, d_scratch2=None):
    """Kernels 3 to 7, the same outputs as version 1's ``gated_backward_device``, through
    d_partials (``gain_parts(N)``, D) and question 21's split-K scratch (tiled_matmul.scratch(D,
    H, N) and (H, D, N)), allocated here when None. D a multiple of 4, the arrays 16-byte aligned."""
    N, D = d_dout.shape
    if D % VECTOR or not aligned(d_dout, d_f, d_gain, d_g):
        raise ValueError(f"version 2 reads 4 channels at a time: D must be a multiple of 4 (D = {D}) and the "
                         "arrays 16-byte aligned; version 1 takes any D")
    if d_partials is None:
        d_partials = cuda.device_array((gain_parts(N), D), dtype=d_dout.dtype)
    parts = d_partials.shape[0]
    gain_partials_kernel[(math.ceil(D / (GROUPS * VECTOR)), parts), (LANES, GROUPS)](
        d_dout.ravel(), d_f.ravel(), d_gain, d_g.ravel(), u64(N), u64(D), u64(math.ceil(N / parts)), d_partials.ravel())
    rb2.sum_parts_device(d_partials, parts, D, 1, D, d_dgain)        # a warp a channel
    rb2.hidden_backward_device(d_g, d_a, d_W2, d_dz)
    rb2.input_backward_device(d_dout, d_dz, d_W1, True, d_dh)       # the identity passes dout as is
    rb2.weight_grad_device(d_h, d_dz, d_dW1, d_scratch1)
    rb2.weight_grad_device(d_a, d_g, d_dW2, d_scratch2)
