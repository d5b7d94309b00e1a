"""Question 27's tensor-parallel layers in Numba CUDA: a column-parallel and a row-parallel
linear layer on P ranks, forward and backward, and Megatron's MLP block made of one of each.

On real hardware each rank is a GPU and the all-reduce is NCCL's. Here the ranks share one
device: every rank's shard is a launch of its own on its own arrays, the work one rank's GPU
would do, and the all-reduce is a kernel that sums the ranks' partial arrays (one (P, ...)
buffer, rank r's at [r]) in rank order, what a ring all-reduce computes with its rounding
order fixed. Every rank then reads the one sum.

1. ``matmul_kernel``: C = op(A) @ op(B) for one rank's shard, one thread per output entry,
   reading A and B through strides: A^T and B^T (the backward's dx = dy W^T and dW = x^T dy)
   are the same kernel with the strides swapped, nothing copied.
2. ``add_bias_kernel``: C[n, j] += b[j]: on every rank where the bias is sharded
   (column-parallel), once after the all-reduce where it is replicated (row-parallel). A 2-D
   grid, columns along x and rows along y: no division per element.
3. ``column_partial_sums_kernel`` then ``column_sum_kernel``: db[j] = sum over n of dy[n, j] in
   two stages, partial sums over chunks of 64 rows (a thread per column and chunk), then the
   chunks in order (a thread per column). One stage, a thread per column, starts only D threads:
   1,024 at the benchmark's LARGE size, a hundredth of what an H200 keeps busy.
4. ``all_reduce_kernel``: out[e] = sum over r of partial[r, e], in rank order.
5. ``tanh_kernel`` and ``tanh_backward_kernel``: the block's activation on each rank's own
   hidden columns, and dz = dh (1 - h^2) from the saved h. No communication: tanh is elementwise.

Indices are unsigned 64-bit (``_u``): Numba drops the negative-index check on every load.
Every kernel is a grid-stride loop over its outputs (launches of 128 threads a block, at most
4096 blocks along x and 65,535 along y). Math runs in the arrays' dtype: the zero and the one come in it.

The launchers (``*_device``) take C-ordered device arrays in their natural shapes, hand the
kernels flat views (a ravel: no copy) and only launch: the benchmark times them and
kernels/runtime/dry_run.py checks their grids at any size. The host functions at the bottom take and
return lists of P numpy arrays, rank r's at index r, as the solution notebook's do.

Run the tests under the simulator (no GPU needed), on a GPU with BACKPROP_TRAPS_REAL_GPU=1:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/kernels/test_tensor_parallel_linear_kernels.py
Check and time it: python -m backprop_traps.kernels.tensor_parallel_linear (from any folder) runs
these kernels on the benchmark's tiny cases (kernels/cases/tensor_parallel_linear.py) in float64
and float32 against the solution notebook, and times them (kernels/runtime/self_check.py).

Shapes: P ranks, N rows, D_in, D_out; a rank's shard of a column-parallel W is (D_in, D_out / P),
of a row-parallel W (D_in / P, D_out); the block's hidden width H, H / P a rank.
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m backprop_traps.kernels.tensor_parallel_linear: no GPU? the simulator
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numba
import numpy as np

from backprop_traps.kernels.runtime.device import cuda  # numba.cuda, its simulator (launches checked) or numba-cuda-mlir

THREADS = 128
MAX_BLOCKS = 4096  # a grid-stride loop covers the rest
MAX_Y = 65_535     # grid y's hardware limit: rows or chunks beyond it are strided over
ROWS_PER_CHUNK = 64  # a bias gradient's first stage: rows one thread sums


def launch_config(entries: int):
    """(blocks, threads) for a grid-stride loop over ``entries``."""
    return max(1, min(MAX_BLOCKS, math.ceil(entries / THREADS))), THREADS


@cuda.jit(device=True)
def _u(i):
    """An unsigned 64-bit offset: a flat index that never needs a negative-index check."""
    return numba.uint64(i)


# 1. one rank's product, transposes by strides ----------------------------------------------------
@cuda.jit
def matmul_kernel(a, a_row, a_col, b, b_row, b_col, c, rows, cols, inner, zero):
    # A[i, k] = a[i * a_row + k * a_col], B[k, j] = b[k * b_row + j * b_col]; c: rows * cols (written)
    for e in range(_u(cuda.grid(1)), _u(rows) * _u(cols), _u(cuda.gridsize(1))):
        i, j = e // _u(cols), e % _u(cols)
        acc = zero
        for k in range(_u(inner)):
            acc += a[i * _u(a_row) + k * _u(a_col)] * b[k * _u(b_row) + j * _u(b_col)]
        c[e] = acc


# 2. the bias, added where it belongs ----------------------------------------------------------
@cuda.jit
def add_bias_kernel(c, bias, rows, cols):
    # c: rows * cols (updated in place), bias: cols. Grid x over columns, y over rows, both
    # strided: no division or modulo per element, and a warp's columns side by side in memory.
    for n in range(_u(cuda.blockIdx.y), _u(rows), _u(cuda.gridDim.y)):
        for j in range(_u(cuda.grid(1)), _u(cols), _u(cuda.gridsize(1))):
            c[n * _u(cols) + j] += bias[j]


# 3. a bias's gradient, in two stages ----------------------------------------------------------
@cuda.jit
def column_partial_sums_kernel(dy, rows, cols, chunk, partial, zero):
    # dy: rows * cols; partial: chunks * cols (written), partial[k, j] = sum of dy[n, j] over the
    # rows n of chunk k, in order. Grid x over columns, y over chunks: enough threads to fill a
    # GPU when the columns alone are a few thousand.
    chunks = (_u(rows) + _u(chunk) - _u(1)) // _u(chunk)
    for k in range(_u(cuda.blockIdx.y), chunks, _u(cuda.gridDim.y)):
        stop = min(_u(rows), (k + _u(1)) * _u(chunk))
        for j in range(_u(cuda.grid(1)), _u(cols), _u(cuda.gridsize(1))):
            acc = zero
            for n in range(k * _u(chunk), stop):
                acc += dy[n * _u(cols) + j]
            partial[k * _u(cols) + j] = acc


@cuda.jit
def column_sum_kernel(partial, chunks, db, zero):
    # partial: chunks * cols; db: cols (written), the chunks summed in order
    cols = _u(db.size)
    for j in range(_u(cuda.grid(1)), cols, _u(cuda.gridsize(1))):
        acc = zero
        for k in range(_u(chunks)):
            acc += partial[k * cols + j]
        db[j] = acc


# 4. the all-reduce: the ranks' partial arrays summed in rank order ---------------------------------
@cuda.jit
def all_reduce_kernel(partial, ranks, out):
    # partial: ranks * E, rank r's at r * E; out: E (written)
    E = _u(out.size)
    for e in range(_u(cuda.grid(1)), E, _u(cuda.gridsize(1))):
        acc = partial[e]
        for r in range(_u(1), _u(ranks)):
            acc += partial[r * E + e]
        out[e] = acc


# 5. the activation, forward above backward ----------------------------------------------------
@cuda.jit
def tanh_kernel(z, h):
    for e in range(_u(cuda.grid(1)), _u(z.size), _u(cuda.gridsize(1))):
        h[e] = math.tanh(z[e])


@cuda.jit
def tanh_backward_kernel(dh, h, dz, one):
    # dz = dh * (1 - h^2), from the saved output h
    for e in range(_u(cuda.grid(1)), _u(h.size), _u(cuda.gridsize(1))):
        v = h[e]
        dz[e] = dh[e] * (one - v * v)


# -- launchers: device arrays in, launches only ------------------------------------------------
def _flat(a):
    return a.ravel() if a.ndim > 1 else a


def matmul_device(a, transpose_a, b, transpose_b, c):
    """c (rows, cols) = op(a) @ op(b); a, b 2-D and C-ordered, op a transpose where asked."""
    (ar, ac), (br, bc) = a.shape, b.shape
    a_row, a_col, rows, inner = (1, ac, ac, ar) if transpose_a else (ac, 1, ar, ac)
    b_row, b_col, cols = (1, bc, br) if transpose_b else (bc, 1, bc)
    zero = c.dtype.type(0)
    matmul_kernel[launch_config(rows * cols)](_flat(a), a_row, a_col, _flat(b), b_row, b_col, _flat(c),
                                               rows, cols, inner, zero)


def _rows_by_columns(rows, cols):
    """A 2-D grid: x covers the columns (at most MAX_BLOCKS blocks), y the rows (at most 65,535)."""
    return (max(1, min(MAX_BLOCKS, math.ceil(cols / THREADS))), max(1, min(MAX_Y, rows))), (THREADS, 1)


def add_bias_device(c, bias):
    rows, cols = c.size // bias.size, bias.size
    grid, block = _rows_by_columns(rows, cols)
    add_bias_kernel[grid, block](_flat(c), bias, rows, cols)


def column_sum_chunks(rows: int) -> int:
    """How many row chunks a bias gradient's first stage makes (the scratch's first axis)."""
    return math.ceil(rows / ROWS_PER_CHUNK)


def column_sum_device(dy, db, scratch):
    """db = dy.sum(axis=0): partial sums over chunks of ROWS_PER_CHUNK rows into ``scratch``
    (column_sum_chunks(rows), cols), then the chunks summed in order."""
    rows, cols = dy.shape
    grid, block = _rows_by_columns(column_sum_chunks(rows), cols)
    zero = db.dtype.type(0)
    column_partial_sums_kernel[grid, block](_flat(dy), rows, cols, ROWS_PER_CHUNK, _flat(scratch), zero)
    column_sum_kernel[launch_config(cols)](_flat(scratch), scratch.shape[0], db, zero)


def all_reduce_device(partial, out):
    """out = partial.sum(axis=0) in rank order; partial (P, ...), out (...)."""
    all_reduce_kernel[launch_config(out.size)](_flat(partial), partial.shape[0], _flat(out))


def tanh_device(z, h):
    tanh_kernel[launch_config(z.size)](_flat(z), _flat(h))


def tanh_backward_device(dh, h, dz):
    tanh_backward_kernel[launch_config(h.size)](_flat(dh), _flat(h), _flat(dz), h.dtype.type(1))


# -- host functions: lists of P numpy arrays, as the contract --------------------------------------
def _dev(a, dtype=np.float64):
    return cuda.to_device(np.ascontiguousarray(a, dtype=dtype))


def _product(A, B, transpose_a=False, transpose_b=False, bias=None):
    """op(A) @ op(B) (+ bias) on the device, back on the host."""
    rows = A.shape[1] if transpose_a else A.shape[0]
    cols = B.shape[0] if transpose_b else B.shape[1]
    c = cuda.device_array((rows, cols), dtype=np.float64)
    matmul_device(_dev(A), transpose_a, _dev(B), transpose_b, c)
    if bias is not None:
        add_bias_device(c, _dev(bias))
    return c.copy_to_host()


def all_reduce(tensors):
    """The ranks' arrays summed on the device in rank order; P copies of the sum."""
    out = cuda.device_array(np.shape(tensors[0]), dtype=np.float64)
    all_reduce_device(_dev(np.stack(tensors)), out)
    total = out.copy_to_host()
    return [total.copy() for _ in tensors]


def _bias_grad(dy):
    db = cuda.device_array(dy.shape[1], dtype=np.float64)
    scratch = cuda.device_array((column_sum_chunks(dy.shape[0]), dy.shape[1]), dtype=np.float64)
    column_sum_device(_dev(dy), db, scratch)
    return db.copy_to_host()


def _elementwise(launcher, *arrays):
    out = cuda.device_array(np.shape(arrays[0]), dtype=np.float64)
    launcher(*[_dev(a) for a in arrays], out)
    return out.copy_to_host()


def column_parallel_forward(x_ranks, W_shards, b_shards):
    return [_product(x, W, bias=b) for x, W, b in zip(x_ranks, W_shards, b_shards)]


def column_parallel_backward(dy_shards, x_ranks, W_shards):
    partial = [_product(dy, W, transpose_b=True) for dy, W in zip(dy_shards, W_shards)]  # rank r's term
    dW = [_product(x, dy, transpose_a=True) for x, dy in zip(x_ranks, dy_shards)]
    return all_reduce(partial), dW, [_bias_grad(dy) for dy in dy_shards]


def row_parallel_forward(x_shards, W_shards, b_ranks):
    summed = all_reduce([_product(x, W) for x, W in zip(x_shards, W_shards)])
    out = []
    for y, b in zip(summed, b_ranks):  # the bias once, after the sum
        c = _dev(y)
        add_bias_device(c, _dev(b))
        out.append(c.copy_to_host())
    return out


def row_parallel_backward(dout_ranks, x_shards, W_shards):
    dx = [_product(d, W, transpose_b=True) for d, W in zip(dout_ranks, W_shards)]
    dW = [_product(x, d, transpose_a=True) for x, d in zip(x_shards, dout_ranks)]
    return dx, dW, [_bias_grad(d) for d in dout_ranks]


def mlp_forward(x_ranks, W1_shards, b1_shards, W2_shards, b2_ranks):
    h = [_elementwise(tanh_device, z) for z in column_parallel_forward(x_ranks, W1_shards, b1_shards)]
    return row_parallel_forward(h, W2_shards, b2_ranks)


def mlp_backward(dout_ranks, x_ranks, W1_shards, b1_shards, W2_shards):
    h = [_elementwise(tanh_device, z) for z in column_parallel_forward(x_ranks, W1_shards, b1_shards)]
    dh, dW2, db2 = row_parallel_backward(dout_ranks, h, W2_shards)
    dz = [_elementwise(tanh_backward_device, g, hr) for g, hr in zip(dh, h)]
    dx, dW1, db1 = column_parallel_backward(dz, x_ranks, W1_shards)
    return dx, dW1, db1, dW2, db2


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("tensor_parallel_linear"))
