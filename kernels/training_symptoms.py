"""The block that starts as the identity, in Numba CUDA: out = h + gain * relu(h @ W1) @ W2 with a
per-channel gain (LayerScale; ReZero is the same gain in every channel), forward above backward.

Question 22's diagnosis reads logs on the host; what runs on a GPU is the fix, the gated block.
Its matrix products are question 21's kernels (kernels/residual_backward.py: flat arrays, unsigned
offsets, one thread per output entry, each weight gradient a fixed-order sum over the rows); this
file adds what the gain brings:

  forward   1. residual_backward.hidden_forward_kernel: a = relu(h @ W1).
            2. gated_output_kernel: f = a @ W2 (kept: the gain's gradient reads it) and
               out = h + gain * f, one thread per (n, j).
  backward  3. gain_grad_kernel: dgain[j] = sum_n dout[n, j] * f[n, j], one thread per channel,
               the rows in order (no atomics: the same bits every run). Not 0 at gain 0.
            4. scale_rows_kernel: g = dout * gain, what reaches the branch's output.
            5. residual_backward.hidden_backward_kernel on g: dz = (g @ W2^T) * [a > 0].
            6. residual_backward.input_backward_kernel with the skip: dh = dout + dz @ W1^T (the
               identity passes dout as is).
            7. residual_backward.weight_grad_kernel: dW1 = h^T dz, dW2 = a^T g.
At gain 0: out = h exactly, dh = dout, dW1 = dW2 = 0 and dgain = sum_n dout * f.

Version 2 (``gated_forward_v2_device``, ``gated_backward_v2_device``; the static table predicts
version 1's products compute-bound one-thread-per-output loops, its gain gradient D = 512
threads for a GPU that holds 270,336, and its dout * gain a 64-bit modulo an element):
  forward   1. residual_backward_v2.hidden_forward_kernel: a = relu(h @ W1), tiled.
            2. gated_output_tiled_kernel: kernels/common/tiled_matmul.py's tile of a @ W2, then f and
               out = h + gain * f in the epilogue.
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

The launchers (``gated_forward_device``, ``gated_backward_device`` and version 2's) take
device arrays in their natural shapes and only launch (question 21's launchers for its
kernels): the benchmark times them and kernels/runtime/dry_run.py checks their grids at any size. The
host functions at the bottom take and return numpy arrays, with either version (``version``).

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_training_symptoms_kernels.py
Check and time it: python -m backprop_traps.kernels.training_symptoms (from any folder) runs
these kernels on the benchmark's tiny cases (kernels/cases/training_symptoms.py) in float64
and float32 against the solution notebook, and times them (kernels/runtime/self_check.py; the
simulator without a GPU).

Shapes: N rows, D channels, H hidden units. h, dout, out, f, g, dh (N, D); W1 (D, H); W2 (H, D);
a, dz (N, H); gain, dgain (D,); version 2's partials (P, D). Flat and C-ordered inside the
kernels; math in h's dtype.
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.training_symptoms: no GPU? the simulator first
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numpy as np

from backprop_traps.kernels import residual_backward_v2 as rb2
from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.runtime.launch_limits import MAX_GRID
from backprop_traps.kernels.common.patterns import FULL_MASK, VECTOR, aligned, bounded_jit, load4, store4, u64
from backprop_traps.kernels.residual_backward import (THREADS, _blocks, _u, hidden_backward_device,
                                                      hidden_forward_device, input_backward_device,
                                                      weight_grad_device)
from backprop_traps.kernels.common.tiled_matmul import BM, BN, R, T, TILE_A, TILE_B, THREADS as TILE_THREADS, grid, product_tile

LANES, GROUPS = 8, 32     # gain_partials_kernel's block: 8 lanes of rows by 32 groups of 4 channels
ROWS_PER_LANE = 8         # at least, so a part is 64 rows or more
MAX_PARTS = 256           # P at most: the second stage adds P values a channel


# 2. the gated output --------------------------------------------------------------------------
@cuda.jit
def gated_output_kernel(h, a, W2, gain, f, out, rows, D, H, zero):
    # h: N*D; a: N*H; W2: H*D; gain: D; f, out: N*D (written), f = a @ W2, out = h + gain * f
    i = cuda.grid(1)
    if i < rows * D:
        flat, Du, Hu = _u(i), _u(D), _u(H)
        n, j = flat // Du, flat % Du
        acc = zero
        for k in range(Hu):
            acc += a[n * Hu + k] * W2[k * Du + j]
        f[flat] = acc
        out[flat] = h[flat] + gain[j] * acc


# 3. + 4. what the gain brings to the backward ---------------------------------------------------
@cuda.jit
def gain_grad_kernel(dout, f, dgain, rows, D, zero):
    # dout, f: N*D; dgain: D (written), the column sums of dout * f, rows in order
    j = cuda.grid(1)
    if j < D:
        Du, col = _u(D), _u(j)
        acc = zero
        for n in range(_u(rows)):
            acc += dout[n * Du + col] * f[n * Du + col]
        dgain[col] = acc


@cuda.jit
def scale_rows_kernel(dout, gain, g, rows, D):
    # dout: N*D; gain: D; g: N*D (written), g = dout * gain, channel by channel
    i = cuda.grid(1)
    if i < rows * D:
        flat = _u(i)
        g[flat] = dout[flat] * gain[flat % _u(D)]


# version 2: 2. the gated output, tiled -------------------------------------------------------------
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


# version 2: 3. + 4. the gain's gradient and dout * gain in one pass -----------------------------
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
def gated_forward_device(d_h, d_W1, d_W2, d_gain, d_a, d_f, d_out):
    """Kernels 1 and 2: d_a (N, H) = relu(h @ W1), d_f (N, D) = a @ W2 and d_out (N, D) =
    h + gain * f, from d_h (N, D), d_W1 (D, H), d_W2 (H, D) and d_gain (D,)."""
    (N, D), H = d_h.shape, d_W1.shape[1]
    hidden_forward_device(d_h, d_W1, d_a)
    gated_output_kernel[_blocks(N * D), THREADS](d_h.ravel(), d_a.ravel(), d_W2.ravel(), d_gain, d_f.ravel(),
                                                 d_out.ravel(), N, D, H, d_h.dtype.type(0))


def gated_backward_device(d_dout, d_h, d_a, d_f, d_W1, d_W2, d_gain, d_dgain, d_g, d_dz, d_dh, d_dW1, d_dW2):
    """Kernels 3 to 7 from d_dout (N, D) and the forward's d_a (N, H) and d_f (N, D): d_dgain
    (D,), d_g (N, D) = dout * gain, d_dz (N, H), d_dh (N, D) = dout + dz @ W1^T, d_dW1 (D, H)
    and d_dW2 (H, D)."""
    N, D = d_dout.shape
    gain_grad_kernel[_blocks(D), THREADS](d_dout.ravel(), d_f.ravel(), d_dgain, N, D, d_dout.dtype.type(0))
    scale_rows_kernel[_blocks(N * D), THREADS](d_dout.ravel(), d_gain, d_g.ravel(), N, D)
    hidden_backward_device(d_g, d_a, d_W2, d_dz)
    input_backward_device(d_dout, d_dz, d_W1, True, d_dh)  # the identity passes dout as is
    weight_grad_device(d_h, d_dz, d_dW1)
    weight_grad_device(d_a, d_g, d_dW2)


def gain_parts(n_rows: int) -> int:
    """P, version 2's parts of the rows: at least LANES * ROWS_PER_LANE rows each, at most MAX_PARTS."""
    return max(1, min(MAX_PARTS, math.ceil(n_rows / (LANES * ROWS_PER_LANE)), MAX_GRID[1]))


def gated_forward_v2_device(d_h, d_W1, d_W2, d_gain, d_a, d_f, d_out):
    """Version 2 of kernels 1 and 2, tiled: d_a (N, H), d_f (N, D) and d_out (N, D)."""
    (N, D), H = d_h.shape, d_W1.shape[1]
    rb2.hidden_forward_device(d_h, d_W1, d_a)
    gated_output_tiled_kernel[grid(N, D), TILE_THREADS](d_h.ravel(), d_a.ravel(), d_W2.ravel(), d_gain, d_f.ravel(),
                                                        d_out.ravel(), u64(N), u64(D), u64(H))


def gated_backward_v2_device(d_dout, d_h, d_a, d_f, d_W1, d_W2, d_gain, d_dgain, d_g, d_dz, d_dh, d_dW1, d_dW2,
                             d_partials=None, d_scratch1=None, d_scratch2=None):
    """Version 2 of kernels 3 to 7, the same outputs as ``gated_backward_device``, through
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


# host functions: numpy in, numpy out ------------------------------------------------------------
def _on_device(dtype, *arrays):
    return [cuda.to_device(np.ascontiguousarray(a, dtype=dtype)) for a in arrays]


def _launchers(version: int):
    """(forward, backward) launchers of version 1 or 2."""
    if version not in (1, 2):
        raise ValueError(f"version is 1 or 2, not {version!r}")
    return ((gated_forward_device, gated_backward_device) if version == 1
            else (gated_forward_v2_device, gated_backward_v2_device))


def _forward(d_h, d_W1, d_W2, d_gain, version):
    """The forward's device arrays: (out, a, f)."""
    (N, D), H, dtype = d_h.shape, d_W1.shape[1], d_h.dtype
    d_a = cuda.device_array((N, H), dtype=dtype)
    d_f, d_out = cuda.device_array((N, D), dtype=dtype), cuda.device_array((N, D), dtype=dtype)
    forward, _ = _launchers(version)
    forward(d_h, d_W1, d_W2, d_gain, d_a, d_f, d_out)
    return d_out, d_a, d_f


def gated_block_forward(h, W1, W2, gain, version=1):
    """out (N, D) as the solution's ``gated_block_forward``, in h's dtype."""
    h = np.asarray(h)
    d_out, _, _ = _forward(*_on_device(h.dtype, h, W1, W2, gain), version)
    return d_out.copy_to_host()


def gated_block_backward(dout, h, W1, W2, gain, version=1):
    """(dh, dW1, dW2, dgain) as the solution's ``gated_block_backward``, in h's dtype; the
    forward's a and f are recomputed from h."""
    h = np.asarray(h)
    dtype, (N, D), H = h.dtype, h.shape, np.shape(W1)[1]
    d_dout, d_h, d_W1, d_W2, d_gain = _on_device(dtype, dout, h, W1, W2, gain)
    _, d_a, d_f = _forward(d_h, d_W1, d_W2, d_gain, version)
    d_dgain = cuda.device_array(D, dtype=dtype)
    d_g, d_dh = cuda.device_array((N, D), dtype=dtype), cuda.device_array((N, D), dtype=dtype)
    d_dz = cuda.device_array((N, H), dtype=dtype)
    d_dW1, d_dW2 = cuda.device_array((D, H), dtype=dtype), cuda.device_array((H, D), dtype=dtype)
    _, backward = _launchers(version)
    backward(d_dout, d_h, d_a, d_f, d_W1, d_W2, d_gain, d_dgain, d_g, d_dz, d_dh, d_dW1, d_dW2)
    return d_dh.copy_to_host(), d_dW1.copy_to_host(), d_dW2.copy_to_host(), d_dgain.copy_to_host()


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("training_symptoms"))
