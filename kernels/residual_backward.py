"""A stack of residual blocks in Numba CUDA: each block's forward above its backward, the
weight gradients, and the per-layer gradient norms.

Block l computes F(h) = relu(h @ W1) @ W2 and h' = h + F(h) with the skip (``skip`` = 1 in the
array's dtype) or h' = F(h) without it (``skip`` = 0): the identity is one multiply-add in the
kernel that writes h', and the same in the backward, where it adds the gradient from above
once. Inside the kernels every array is flat and C-ordered; the hot loops index it with
unsigned 64-bit offsets (``_u``), which spares each load the negative-index check a signed
index pays.

  forward   1. hidden_forward_kernel: a = relu(h @ W1), one thread per (n, k) of a (N, H).
            2. output_forward_kernel: h' = skip * h + a @ W2, one thread per (n, j) of h' (N, D).
  backward  3. hidden_backward_kernel: dz = (g @ W2^T) * [a > 0], one thread per (n, k); a > 0
               exactly where z > 0, so the forward's a is the ReLU's mask.
            4. input_backward_kernel: dh = skip * g + dz @ W1^T, one thread per (n, d).
            5. weight_grad_kernel: dW = A^T B summed over the N rows in a fixed order, one thread
               per weight, no atomics: dW2 = a^T g and dW1 = h^T dz.
  norms     6. layer_sum_squares_kernel: one block per layer of dhs (the grid's x is L + 1), a
               tree in shared memory over that layer's N * D entries; the host takes the roots.

Version 2 (kernels/residual_backward_v2.py) keeps this plan and makes it fast: kernels 1-5 as
tiled products (64 x 64 outputs a block through shared memory, 4 x 4 a thread in registers:
kernels/common/tiled_matmul.py) with the ReLU, the identity and the gate in their epilogues, and the
norms in two stages, many blocks a layer then a warp a layer (one block a layer is 9 blocks at
the benchmark's LARGE size: the static table predicts 1% of copy bandwidth). The host
functions below run either (``version``).

The launchers (``*_device``) take device arrays in their natural shapes, hand the kernels
flat views of them (a ravel of a C-ordered array: no copy) and only launch: the benchmark
times them and kernels/runtime/dry_run.py checks their grids at any size. ``block_forward_device``
and ``block_backward_device`` are one block's launches together (question 22's gated block
reuses the single ones). The host functions at the bottom take and return numpy arrays, as
the solution notebook's do; the backward recomputes each block's a from the state it is
given (one launch of kernel 1), as the notebook recomputes z. Launches are 1-D: grid x is
ceil(entries / THREADS), under 2^31 - 1 up to 2.7e11 entries (an 80 GB GPU holds 2e10 fp32).

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_residual_backward_kernels.py
Check and time it: python -m backprop_traps.kernels.residual_backward (from any folder) runs
these kernels on the benchmark's tiny cases (kernels/cases/residual_backward.py) in float64
and float32 against the solution notebook, and times them (kernels/runtime/self_check.py; the
simulator without a GPU).

Shapes: L blocks, N rows, D features, H hidden units. x, h, g, dh (N, D); W1 (D, H); W2 (H, D);
a, dz (N, H); hs, dhs (L + 1, N, D). Flat and C-ordered inside the kernels; math runs in x's
dtype (the zero and the skip come in it).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.residual_backward: no GPU? the simulator first
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import functools
import math
from types import SimpleNamespace

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda

THREADS = 128         # elementwise launches: a 1-D grid, one thread per output entry
REDUCE_THREADS = 128  # kernel 6: a power of two, the tree halves it


@cuda.jit(device=True)
def _u(i):
    """An unsigned 64-bit offset: a flat index that never needs a negative-index check."""
    return numba.uint64(i)


# 1. + 2. one block, forward --------------------------------------------------------------------
@cuda.jit
def hidden_forward_kernel(h, W1, a, rows, D, H, zero):
    # h: N*D; W1: D*H; a: N*H (written), a = relu(h @ W1)
    i = cuda.grid(1)
    if i < rows * H:
        flat, Du, Hu = _u(i), _u(D), _u(H)
        n, k = flat // Hu, flat % Hu
        acc = zero
        for d in range(Du):
            acc += h[n * Du + d] * W1[d * Hu + k]
        a[flat] = acc if acc > zero else zero


@cuda.jit
def output_forward_kernel(h, a, W2, out, rows, D, H, skip):
    # h: N*D; a: N*H; W2: H*D; out: N*D (written), out = skip * h + a @ W2
    i = cuda.grid(1)
    if i < rows * D:
        flat, Du, Hu = _u(i), _u(D), _u(H)
        n, j = flat // Du, flat % Du
        acc = skip * h[flat]
        for k in range(Hu):
            acc += a[n * Hu + k] * W2[k * Du + j]
        out[flat] = acc


# 3. + 4. one block, backward -------------------------------------------------------------------
@cuda.jit
def hidden_backward_kernel(g, a, W2, dz, rows, D, H, zero):
    # g: N*D, the gradient at the block's output; a: N*H; W2: H*D; dz: N*H (written)
    i = cuda.grid(1)
    if i < rows * H:
        flat, Du, Hu = _u(i), _u(D), _u(H)
        n, k = flat // Hu, flat % Hu
        acc = zero
        if a[flat] > zero:  # relu' is 0 at z <= 0: nothing passes
            for j in range(Du):
                acc += g[n * Du + j] * W2[k * Du + j]
        dz[flat] = acc


@cuda.jit
def input_backward_kernel(g, dz, W1, dh, rows, D, H, skip):
    # g: N*D; dz: N*H; W1: D*H; dh: N*D (written), dh = skip * g + dz @ W1^T
    i = cuda.grid(1)
    if i < rows * D:
        flat, Du, Hu = _u(i), _u(D), _u(H)
        n, d = flat // Du, flat % Du
        acc = skip * g[flat]  # the identity: the gradient from above, once
        for k in range(Hu):
            acc += dz[n * Hu + k] * W1[d * Hu + k]
        dh[flat] = acc


# 5. a weight's gradient ------------------------------------------------------------------------
@cuda.jit
def weight_grad_kernel(A, B, dW, rows, R, C, zero):
    # A: N*R; B: N*C; dW: R*C (written), dW = A^T B, the rows summed in order
    i = cuda.grid(1)
    if i < R * C:
        flat, Ru, Cu = _u(i), _u(R), _u(C)
        r, c = flat // Cu, flat % Cu
        acc = zero
        for n in range(_u(rows)):
            acc += A[n * Ru + r] * B[n * Cu + c]
        dW[flat] = acc


# 6. the per-layer sums of squares --------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def layer_sum_squares_kernel(dtype: np.dtype):
    shared_type = numba.from_dtype(dtype)
    zero = dtype.type(0)

    @cuda.jit
    def layer_sum_squares(dhs, per_layer, sums):
        # dhs: (L+1)*per_layer, flat; sums: L+1 (written), block b sums layer b's squares
        s = cuda.shared.array(REDUCE_THREADS, shared_type)
        tid = cuda.threadIdx.x
        base = _u(cuda.blockIdx.x) * _u(per_layer)
        acc = zero
        for k in range(_u(tid), _u(per_layer), _u(REDUCE_THREADS)):
            v = dhs[base + k]
            acc += v * v
        s[tid] = acc
        cuda.syncthreads()
        stride = REDUCE_THREADS // 2
        while stride > 0:
            if tid < stride:
                s[tid] += s[tid + stride]
            cuda.syncthreads()
            stride //= 2
        if tid == 0:
            sums[cuda.blockIdx.x] = s[0]

    return layer_sum_squares


# launchers: device arrays in, launched ------------------------------------------------------------
def _blocks(total: int) -> int:
    """Grid x for one thread per entry: at least one block."""
    return max(1, math.ceil(total / THREADS))


def hidden_forward_device(d_h, d_W1, d_a):
    """Kernel 1: d_a (N, H) = relu(h @ W1), from d_h (N, D) and d_W1 (D, H)."""
    (N, D), H = d_h.shape, d_W1.shape[1]
    hidden_forward_kernel[_blocks(N * H), THREADS](d_h.ravel(), d_W1.ravel(), d_a.ravel(), N, D, H,
                                                   d_h.dtype.type(0))


def output_forward_device(d_h, d_a, d_W2, skip, d_out):
    """Kernel 2: d_out (N, D) = skip * h + a @ W2, from d_a (N, H) and d_W2 (H, D)."""
    (N, D), H = d_h.shape, d_a.shape[1]
    output_forward_kernel[_blocks(N * D), THREADS](d_h.ravel(), d_a.ravel(), d_W2.ravel(), d_out.ravel(),
                                                   N, D, H, d_h.dtype.type(skip))


def hidden_backward_device(d_g, d_a, d_W2, d_dz):
    """Kernel 3: d_dz (N, H) = (g @ W2^T) * [a > 0], from d_g (N, D)."""
    (N, D), H = d_g.shape, d_a.shape[1]
    hidden_backward_kernel[_blocks(N * H), THREADS](d_g.ravel(), d_a.ravel(), d_W2.ravel(), d_dz.ravel(),
                                                    N, D, H, d_g.dtype.type(0))


def input_backward_device(d_g, d_dz, d_W1, skip, d_dh):
    """Kernel 4: d_dh (N, D) = skip * g + dz @ W1^T, from d_dz (N, H) and d_W1 (D, H)."""
    (N, D), H = d_g.shape, d_dz.shape[1]
    input_backward_kernel[_blocks(N * D), THREADS](d_g.ravel(), d_dz.ravel(), d_W1.ravel(), d_dh.ravel(),
                                                   N, D, H, d_g.dtype.type(skip))


def weight_grad_device(d_A, d_B, d_dW):
    """Kernel 5: d_dW (R, C) = A^T B, from d_A (N, R) and d_B (N, C), the rows summed in order."""
    (N, R), C = d_A.shape, d_B.shape[1]
    weight_grad_kernel[_blocks(R * C), THREADS](d_A.ravel(), d_B.ravel(), d_dW.ravel(), N, R, C,
                                                d_A.dtype.type(0))


def block_forward_device(d_h, d_W1, d_W2, skip, d_a, d_out):
    """One block's forward, kernels 1 and 2: d_a (N, H), and d_out (N, D) its output."""
    hidden_forward_device(d_h, d_W1, d_a)
    output_forward_device(d_h, d_a, d_W2, skip, d_out)


def block_backward_device(d_g, d_h, d_a, d_W1, d_W2, skip, d_dz, d_dh, d_dW1, d_dW2):
    """One block's backward from d_g (N, D), the gradient at its output, and its input d_h and
    hidden activation d_a (N, H): kernels 3, 4 and 5 write d_dz (N, H), d_dh (N, D),
    d_dW1 (D, H) = h^T dz and d_dW2 (H, D) = a^T g."""
    hidden_backward_device(d_g, d_a, d_W2, d_dz)
    input_backward_device(d_g, d_dz, d_W1, skip, d_dh)
    weight_grad_device(d_h, d_dz, d_dW1)
    weight_grad_device(d_a, d_g, d_dW2)


def layer_sum_squares_device(d_dhs, d_sums):
    """Kernel 6: d_sums (L + 1,), each layer's sum of squares of d_dhs (L + 1, ...), one block
    per layer."""
    layers = d_dhs.shape[0]
    layer_sum_squares_kernel(np.dtype(d_dhs.dtype))[layers, REDUCE_THREADS](d_dhs.ravel(), d_dhs.size // layers,
                                                                            d_sums)


# host functions: numpy in, numpy out -----------------------------------------------------------
def _device(a, dtype):
    return cuda.to_device(np.ascontiguousarray(a, dtype=dtype))


def _version(version: int):
    """The launchers of version 1 (this module's, as a namespace) or version 2 (residual_backward_v2)."""
    if version == 2:
        from backprop_traps.kernels import residual_backward_v2
        return residual_backward_v2
    if version != 1:
        raise ValueError(f"version is 1 or 2, not {version!r}")
    return SimpleNamespace(hidden_forward_device=hidden_forward_device, block_forward_device=block_forward_device,
                           block_backward_device=block_backward_device,
                           layer_sum_squares_device=layer_sum_squares_device)


def residual_forward(x, weights, skip, version=1):
    """hs (L + 1, N, D) as the solution's ``residual_forward``, in x's dtype."""
    x, launch = np.asarray(x), _version(version)
    dtype, (N, D) = x.dtype, x.shape
    hs, d_h = [x.copy()], _device(x, dtype)
    for W1, W2 in weights:
        d_a, d_out = cuda.device_array((N, np.shape(W1)[1]), dtype=dtype), cuda.device_array((N, D), dtype=dtype)
        launch.block_forward_device(d_h, _device(W1, dtype), _device(W2, dtype), skip, d_a, d_out)
        hs.append(d_out.copy_to_host())
        d_h = d_out
    return np.stack(hs)


def residual_backward(dout, hs, weights, skip, version=1):
    """(dhs, grads) as the solution's ``residual_backward``, in dout's dtype."""
    dout, launch = np.asarray(dout), _version(version)
    dtype, (N, D), L = dout.dtype, dout.shape, len(weights)
    dhs = np.empty((L + 1, N, D), dtype=dtype)
    dhs[L] = dout
    grads = [None] * L
    d_g = _device(dout, dtype)
    for layer in reversed(range(L)):
        W1, W2 = weights[layer]
        H = np.shape(W1)[1]
        d_h, d_W1, d_W2 = _device(hs[layer], dtype), _device(W1, dtype), _device(W2, dtype)
        d_a = cuda.device_array((N, H), dtype=dtype)
        launch.hidden_forward_device(d_h, d_W1, d_a)  # a, recomputed
        d_dz, d_dh = cuda.device_array((N, H), dtype=dtype), cuda.device_array((N, D), dtype=dtype)
        d_dW1, d_dW2 = cuda.device_array((D, H), dtype=dtype), cuda.device_array((H, D), dtype=dtype)
        launch.block_backward_device(d_g, d_h, d_a, d_W1, d_W2, skip, d_dz, d_dh, d_dW1, d_dW2)
        dhs[layer] = d_dh.copy_to_host()
        grads[layer] = (d_dW1.copy_to_host(), d_dW2.copy_to_host())
        d_g = d_dh
    return dhs, grads


def layer_norms(dhs, version=1):
    """The Frobenius norm of every layer of dhs (L + 1, N, D), with kernel 6."""
    dhs = np.ascontiguousarray(dhs)
    sums = cuda.device_array(dhs.shape[0], dtype=dhs.dtype)
    _version(version).layer_sum_squares_device(cuda.to_device(dhs), sums)
    return np.sqrt(sums.copy_to_host())


def gradient_norms(dout, x, weights, version=1):
    """(with_skip, without_skip) as the solution's ``gradient_norms``."""
    return tuple(layer_norms(residual_backward(dout, residual_forward(x, weights, skip, version), weights, skip,
                                               version)[0], version)
                 for skip in (True, False))


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("residual_backward"))
