"""Question 27's tensor-parallel layers in Numba CUDA: a column-parallel and a row-parallel
linear layer on P ranks, forward and backward, and Megatron's MLP block made of one of each.

On real hardware each rank is a GPU and the all-reduce is NCCL's. Here every rank is a slice
of one device buffer, so the whole P-rank step runs on one GPU with the same kernels a rank
would run, and the all-reduce is a kernel of its own that sums the ranks' partial arrays:

1. ``matmul_kernel``: C = A @ B for one rank's shard, one thread per output element, reading A
   and B through strides, so A^T and B^T (the backward's products) are the same kernel with the
   strides swapped and nothing copied.
2. ``add_bias_kernel``: C[n, j] += b[j], once per rank where the bias is sharded
   (column-parallel), and once after the all-reduce where it is replicated (row-parallel).
3. ``column_sum_kernel``: db[j] = sum over n of dy[n, j], in row order (no atomics).
4. ``all_reduce_kernel``: out[e] = sum over r of partial[r, e], in rank order (what a ring
   all-reduce computes, with its rounding order fixed); every rank then reads the one sum.
5. ``tanh_kernel`` and ``tanh_backward_kernel``: the block's activation, elementwise on each
   rank's own hidden columns, and dz = dh (1 - h^2) from the saved h.

Indices are unsigned 64-bit (``_u``), so Numba drops the negative-index check on every load.
Every kernel is a grid-stride loop over its outputs (1-D launches of 128 threads).

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_tensor_parallel_linear_kernels.py

Shapes as in the contract (docs/questions/tensor_parallel_linear.md): the host functions at the
bottom take and return lists of P numpy arrays, rank r's at index r.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from backprop_traps.kernels.device import cuda  # numba.cuda, its simulator (launches checked) or numba-cuda-mlir

THREADS_PER_BLOCK = 128
MAX_BLOCKS = 4096  # a grid-stride loop covers the rest


def launch_config(elements: int):
    """(blocks, threads) for a grid-stride loop over ``elements``."""
    return max(1, min(MAX_BLOCKS, math.ceil(elements / THREADS_PER_BLOCK))), THREADS_PER_BLOCK


@cuda.jit(device=True)
def _u(i):
    return numba.uint64(i)


# 1. one rank's product, transposes by strides ----------------------------------------------
@cuda.jit
def matmul_kernel(a, a_row, a_col, b, b_row, b_col, c, rows, cols, inner):
    # a, b flat; A[i, k] = a[i * a_row + k * a_col], B[k, j] = b[k * b_row + j * b_col];
    # c: rows * cols (written), C = A @ B
    for e in range(_u(cuda.grid(1)), _u(rows) * _u(cols), _u(cuda.gridsize(1))):
        i, j = e // _u(cols), e % _u(cols)
        acc = 0.0
        for k in range(_u(inner)):
            acc += a[i * _u(a_row) + k * _u(a_col)] * b[k * _u(b_row) + j * _u(b_col)]
        c[e] = acc


# 2. the bias, added where it belongs -------------------------------------------------------
@cuda.jit
def add_bias_kernel(c, bias, cols):
    # c: rows * cols (updated), bias: cols
    for e in range(_u(cuda.grid(1)), _u(c.size), _u(cuda.gridsize(1))):
        c[e] += bias[e % _u(cols)]


# 3. a bias's gradient ----------------------------------------------------------------------
@cuda.jit
def column_sum_kernel(dy, rows, cols, db):
    # dy: rows * cols; db: cols (written), summed in row order
    for j in range(_u(cuda.grid(1)), _u(cols), _u(cuda.gridsize(1))):
        acc = 0.0
        for n in range(_u(rows)):
            acc += dy[n * _u(cols) + j]
        db[j] = acc


# 4. the all-reduce: the ranks' partial arrays summed in rank order ------------------------------
@cuda.jit
def all_reduce_kernel(partial, ranks, out):
    # partial: ranks * E (rank r's at r * E); out: E (written)
    E = out.size
    for e in range(_u(cuda.grid(1)), _u(E), _u(cuda.gridsize(1))):
        acc = partial[e]
        for r in range(_u(1), _u(ranks)):
            acc += partial[r * _u(E) + e]
        out[e] = acc


# 5. the activation, forward above backward -------------------------------------------------
@cuda.jit
def tanh_kernel(z, h):
    for e in range(_u(cuda.grid(1)), _u(z.size), _u(cuda.gridsize(1))):
        h[e] = math.tanh(z[e])


@cuda.jit
def tanh_backward_kernel(dh, h, dz):
    # dz = dh * (1 - h^2), from the saved output h
    for e in range(_u(cuda.grid(1)), _u(h.size), _u(cuda.gridsize(1))):
        v = h[e]
        dz[e] = dh[e] * (1.0 - v * v)


# -- launchers on device arrays --------------------------------------------------------------
def matmul_device(a, a_shape, transpose_a, b, b_shape, transpose_b, c):
    """c (flat) = op(A) @ op(B), A and B C-ordered of ``a_shape`` and ``b_shape``."""
    (ar, ac), (br, bc) = a_shape, b_shape
    a_row, a_col, rows, inner = (1, ac, ac, ar) if transpose_a else (ac, 1, ar, ac)
    b_row, b_col, cols = (1, bc, br) if transpose_b else (bc, 1, bc)
    matmul_kernel[launch_config(rows * cols)](a, a_row, a_col, b, b_row, b_col, c, rows, cols, inner)


def all_reduce_device(partial, ranks, out):
    all_reduce_kernel[launch_config(out.size)](partial, ranks, out)


# -- host functions: lists of P numpy arrays, as the contract ----------------------------------
def _dev(a):
    return cuda.to_device(np.ascontiguousarray(a, dtype=np.float64).ravel())


def _product(A, B, transpose_a=False, transpose_b=False):
    rows = A.shape[1] if transpose_a else A.shape[0]
    cols = B.shape[0] if transpose_b else B.shape[1]
    c = cuda.device_array(rows * cols, dtype=np.float64)
    matmul_device(_dev(A), A.shape, transpose_a, _dev(B), B.shape, transpose_b, c)
    return c, (rows, cols)


def _host(c, shape):
    return c.copy_to_host().reshape(shape)


def all_reduce(tensors):
    """The ranks' arrays summed on the device in rank order; P copies of the sum."""
    shape, P = np.shape(tensors[0]), len(tensors)
    out = cuda.device_array(int(np.prod(shape)), dtype=np.float64)
    all_reduce_device(_dev(np.stack(tensors)), P, out)
    total = _host(out, shape)
    return [total.copy() for _ in range(P)]


def _linear(x, W, b=None):
    c, shape = _product(x, W)
    if b is not None:
        add_bias_kernel[launch_config(c.size)](c, _dev(b), shape[1])
    return _host(c, shape)


def _bias_grad(dy):
    db = cuda.device_array(dy.shape[1], dtype=np.float64)
    column_sum_kernel[launch_config(dy.shape[1])](_dev(dy), dy.shape[0], dy.shape[1], db)
    return db.copy_to_host()


def column_parallel_forward(x_ranks, W_shards, b_shards):
    return [_linear(x, W, b) for x, W, b in zip(x_ranks, W_shards, b_shards)]


def column_parallel_backward(dy_shards, x_ranks, W_shards):
    partial = [_host(*_product(dy, W, transpose_b=True)) for dy, W in zip(dy_shards, W_shards)]
    dW = [_host(*_product(x, dy, transpose_a=True)) for x, dy in zip(x_ranks, dy_shards)]
    return all_reduce(partial), dW, [_bias_grad(dy) for dy in dy_shards]


def row_parallel_forward(x_shards, W_shards, b_ranks):
    summed = all_reduce([_linear(x, W) for x, W in zip(x_shards, W_shards)])
    out = []
    for y, b in zip(summed, b_ranks):  # the bias once, after the sum
        c = _dev(y)
        add_bias_kernel[launch_config(c.size)](c, _dev(b), y.shape[1])
        out.append(_host(c, y.shape))
    return out


def row_parallel_backward(dout_ranks, x_shards, W_shards):
    dx = [_host(*_product(d, W, transpose_b=True)) for d, W in zip(dout_ranks, W_shards)]
    dW = [_host(*_product(x, d, transpose_a=True)) for x, d in zip(x_shards, dout_ranks)]
    return dx, dW, [_bias_grad(d) for d in dout_ranks]


def _tanh(z):
    h = cuda.device_array(z.size, dtype=np.float64)
    tanh_kernel[launch_config(z.size)](_dev(z), h)
    return _host(h, z.shape)


def mlp_forward(x_ranks, W1_shards, b1_shards, W2_shards, b2_ranks):
    h = [_tanh(z) for z in column_parallel_forward(x_ranks, W1_shards, b1_shards)]
    return row_parallel_forward(h, W2_shards, b2_ranks)


def mlp_backward(dout_ranks, x_ranks, W1_shards, b1_shards, W2_shards):
    h = [_tanh(z) for z in column_parallel_forward(x_ranks, W1_shards, b1_shards)]
    dh, dW2, db2 = row_parallel_backward(dout_ranks, h, W2_shards)
    dz = []
    for g, hr in zip(dh, h):
        out = cuda.device_array(hr.size, dtype=np.float64)
        tanh_backward_kernel[launch_config(hr.size)](_dev(g), _dev(hr), out)
        dz.append(_host(out, hr.shape))
    dx, dW1, db1 = column_parallel_backward(dz, x_ranks, W1_shards)
    return dx, dW1, db1, dW2, db2
