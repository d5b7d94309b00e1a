"""Numba CUDA kernels for a strided, zero-padded 1-D convolution, forward and backward: version 1.

The GPU side of the per_step_update_trap question. The filter is shared by every output
position and every example, so its gradient is a reduction over N * L_out terms for each
of its C_out * C_in * K entries. These kernels do that reduction the way a GPU should:

- Stage 1 (``*_partials_kernel``): a grid of (values, P) blocks. Block (e, p) adds up its
  share of value e's terms, one running sum per thread, then sums the block's threads in
  shared memory as a tree (halve the active threads each round, log2(threads) rounds).
  One partial sum per block goes to global memory.
- Stage 2 (``sum_partials_kernel``): one block per value adds up its P partial sums with
  the same tree, and writes the value once.

Why not one global ``cuda.atomic.add`` per term? All N * L_out terms of a weight would hit
the same address, and the hardware serialises atomics on one address, so the "parallel"
reduction runs one term at a time (float64 atomicAdd is native from compute capability 6.0;
it was a compare-and-swap loop only before that).
The order in which atomics land also changes from run to run, so float sums would not be
reproducible. The tree does the same additions in log depth, in a fixed order, and writes
each result once; no kernel in this file uses atomics.

The input gradient needs no reduction across threads: each ``dx`` element gathers the
(window, tap) pairs that read it, so every thread owns exactly one output element.

Version 2 (kernels/per_step_update_trap_v2.py) keeps this plan and makes it fast: issue 34
measured these one-thread-per-output kernels at 0-1% of copy bandwidth, 0.04x cuDNN. There a
convolution is a matrix product per example: a block computes a 32-channel by 128-position
tile through shared memory, 4 x 4 outputs a thread in registers, and the filter gradient's
stage 1 is a tiled product reduced over positions. The host functions below run either
(version 2's are these, on its launchers).

Run: the launchers (``*_device``) take device arrays and only launch (the benchmark times
them, kernels/runtime/dry_run.py checks their grids); host functions take and return numpy
arrays in any float dtype (results take the dtype of the first array argument; zeros come from ``arr.dtype.type(0)`` so float32 math
is never promoted to float64). Under ``NUMBA_ENABLE_CUDASIM=1`` (set by tests/conftest.py
before numba.cuda is imported) they run on the CPU simulator; without it, on the GPU.
Tests (both versions): ``python -m pytest tests/kernels/test_per_step_update_trap_kernels.py -q``.

Shapes: N batch, C_in / C_out input / output channels, L input length, K filter taps,
S stride, P zero padding at each end, L_out = (L + 2P - K) // S + 1 output positions.
x (N, C_in, L), w (C_out, C_in, K), b (C_out,), out and dout (N, C_out, L_out).

Check and time it: python -m backprop_traps.kernels.per_step_update_trap (from any folder)
runs both versions on the benchmark's tiny cases in float64 and float32 against the solution
notebook, the CPU reference, and times them (kernels/runtime/self_check.py; the simulator
without a GPU).
"""

if __name__ == "__main__":  # python -m backprop_traps.kernels.per_step_update_trap: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math
import sys

import numpy as np

from backprop_traps.kernels.runtime.device import cuda

# Launch config. A power of two: the tree reduction halves the active threads each round.
THREADS_PER_BLOCK = 64
# Stage-1 blocks per reduced value; stage 2 folds them with one block per value.
MAX_PARTIALS = 64
# Grid cap for the elementwise kernels, which grid-stride over whatever is left.
MAX_BLOCKS = 4096


# ---- shared index math and the block reduction -------------------------------------

@cuda.jit(device=True)
def unflatten3(index, dim1, dim2):
    """(i0, i1, i2) of a row-major flat index into an array of shape (_, dim1, dim2)."""
    i2 = index % dim2
    rest = index // dim2
    return rest // dim1, rest % dim1, i2


@cuda.jit(device=True)
def input_index(padded, padding, length):
    """Index into x read at padded position ``padded``, or -1 inside the zero padding."""
    i = padded - padding
    if i < 0 or i >= length:
        return -1
    return i


@cuda.jit(device=True)
def window_of_tap(padded, k, stride, out_length):
    """The window t whose tap k reads padded position ``padded`` (t*S + k), or -1 if none."""
    if padded < k or (padded - k) % stride != 0:
        return -1
    t = (padded - k) // stride
    if t >= out_length:
        return -1
    return t


@cuda.jit(device=True)
def block_tree_sum(shared, tid):
    """Sum shared[0:blockDim.x] into shared[0]. Every thread of the block calls it; the block
    is a power of two no larger than THREADS_PER_BLOCK (the shared arrays' size), which
    ``reduction_launch`` checks on the host."""
    cuda.syncthreads()
    active = cuda.blockDim.x // 2
    while active > 0:
        if tid < active:
            shared[tid] += shared[tid + active]
        cuda.syncthreads()  # each round reads what the previous round wrote
        active //= 2


# ---- 1. forward: one thread per output element --------------------------------------

@cuda.jit
def conv1d_forward_kernel(x, w, b, stride, padding, out):
    N, C_in, L = x.shape
    C_out, _, K = w.shape
    L_out = out.shape[2]
    for index in range(cuda.grid(1), N * C_out * L_out, cuda.gridsize(1)):
        n, o, t = unflatten3(index, C_out, L_out)
        acc = b[o]
        for c in range(C_in):
            for k in range(K):
                i = input_index(t * stride + k, padding, L)
                if i >= 0:
                    acc += w[o, c, k] * x[n, c, i]
        out[n, o, t] = acc


# ---- 2. backward-data: a gather, one thread per dx element --------------------------

@cuda.jit
def conv1d_backward_data_kernel(dout, w, stride, padding, dx):
    N, C_in, L = dx.shape
    C_out, _, K = w.shape
    L_out = dout.shape[2]
    for index in range(cuda.grid(1), N * C_in * L, cuda.gridsize(1)):
        n, c, i = unflatten3(index, C_in, L)
        acc = dx.dtype.type(0)
        for k in range(K):
            # tap k of window t read this input; no flip: the same w[o, c, k] comes back
            t = window_of_tap(i + padding, k, stride, L_out)
            if t >= 0:
                for o in range(C_out):
                    acc += dout[n, o, t] * w[o, c, k]
        dx[n, c, i] = acc


# ---- 3. backward-weight and bias: two-stage tree reduction over batch and positions --

@cuda.jit
def conv1d_backward_weight_partials_kernel(dout, x, kernel_size, stride, padding, partials):
    """Stage 1 for dw: block (e, p) sums its share of weight e's N * L_out terms.

    partials: (C_out * C_in * K, P); term r is (n, t) = (r // L_out, r % L_out).
    """
    shared = cuda.shared.array(THREADS_PER_BLOCK, dtype=partials.dtype)
    tid = cuda.threadIdx.x
    N, C_in, L = x.shape
    L_out = dout.shape[2]
    o, c, k = unflatten3(cuda.blockIdx.x, C_in, kernel_size)
    acc = partials.dtype.type(0)
    first = cuda.blockIdx.y * cuda.blockDim.x + tid
    for r in range(first, N * L_out, cuda.gridDim.y * cuda.blockDim.x):
        n = r // L_out
        t = r % L_out
        i = input_index(t * stride + k, padding, L)
        if i >= 0:
            acc += dout[n, o, t] * x[n, c, i]
    shared[tid] = acc
    block_tree_sum(shared, tid)
    if tid == 0:
        partials[cuda.blockIdx.x, cuda.blockIdx.y] = shared[0]


@cuda.jit
def conv1d_backward_bias_partials_kernel(dout, partials):
    """Stage 1 for db: block (o, p) sums its share of the N * L_out entries dout[:, o, :]."""
    shared = cuda.shared.array(THREADS_PER_BLOCK, dtype=partials.dtype)
    tid = cuda.threadIdx.x
    N, _, L_out = dout.shape
    o = cuda.blockIdx.x
    acc = partials.dtype.type(0)
    first = cuda.blockIdx.y * cuda.blockDim.x + tid
    for r in range(first, N * L_out, cuda.gridDim.y * cuda.blockDim.x):
        acc += dout[r // L_out, o, r % L_out]
    shared[tid] = acc
    block_tree_sum(shared, tid)
    if tid == 0:
        partials[o, cuda.blockIdx.y] = shared[0]


@cuda.jit
def sum_partials_kernel(partials, totals):
    """Stage 2: block e adds up row e of the stage-1 partial sums into totals[e]."""
    shared = cuda.shared.array(THREADS_PER_BLOCK, dtype=partials.dtype)
    tid = cuda.threadIdx.x
    row = cuda.blockIdx.x
    acc = partials.dtype.type(0)
    for p in range(tid, partials.shape[1], cuda.blockDim.x):
        acc += partials[row, p]
    shared[tid] = acc
    block_tree_sum(shared, tid)
    if tid == 0:
        totals[row] = shared[0]


# ---- launchers: device arrays in, launched -------------------------------------------

def reduction_launch(kernel, grid, threads=THREADS_PER_BLOCK):
    """``kernel[grid, threads]`` for the three reduction kernels, refusing a block their tree
    and shared arrays cannot take: a power of two, at most THREADS_PER_BLOCK."""
    if threads < 1 or threads > THREADS_PER_BLOCK or threads & (threads - 1):
        raise ValueError(f"a reduction block must be a power of two up to {THREADS_PER_BLOCK} threads, got {threads}")
    return kernel[grid, threads]


def _elementwise_blocks(total):
    return max(1, min(math.ceil(total / THREADS_PER_BLOCK), MAX_BLOCKS))


def partials_per_value(terms):
    """Stage-1 blocks per reduced value: enough for one term per thread, at most MAX_PARTIALS."""
    return max(1, min(math.ceil(terms / THREADS_PER_BLOCK), MAX_PARTIALS))


def bias_parts(n: int, l_out: int) -> int:
    """The bias's stage-1 blocks per channel: as ``partials_per_value`` over its N * L_out terms."""
    return partials_per_value(n * l_out)


def conv1d_forward_device(d_x, d_w, d_b, stride, padding, d_out):
    """Kernel 1: d_out (N, C_out, L_out); grid-stride, at most MAX_BLOCKS blocks."""
    conv1d_forward_kernel[_elementwise_blocks(d_out.size), THREADS_PER_BLOCK](
        d_x, d_w, d_b, int(stride), int(padding), d_out)


def conv1d_backward_data_device(d_dout, d_w, stride, padding, d_dx):
    """Kernel 2: d_dx (N, C_in, L), gathered."""
    conv1d_backward_data_kernel[_elementwise_blocks(d_dx.size), THREADS_PER_BLOCK](
        d_dout, d_w, int(stride), int(padding), d_dx)


def conv1d_backward_weight_device(d_dout, d_x, kernel_size, stride, padding, d_partials, d_dw, threads=THREADS_PER_BLOCK):
    """Kernel 3, both stages: d_dw (C_out * C_in * K,) through d_partials (C_out * C_in * K, P).
    Grid (values, P): values <= 2**31 - 1 along x, P <= MAX_PARTIALS along y."""
    reduction_launch(conv1d_backward_weight_partials_kernel, d_partials.shape, threads)(
        d_dout, d_x, int(kernel_size), int(stride), int(padding), d_partials)
    reduction_launch(sum_partials_kernel, d_partials.shape[0], threads)(d_partials, d_dw)


def conv1d_backward_bias_device(d_dout, d_partials, d_db, threads=THREADS_PER_BLOCK):
    """Kernel 3's bias, both stages: d_db (C_out,) through d_partials (C_out, P)."""
    reduction_launch(conv1d_backward_bias_partials_kernel, d_partials.shape, threads)(d_dout, d_partials)
    reduction_launch(sum_partials_kernel, d_partials.shape[0], threads)(d_partials, d_db)


# ---- host functions: numpy in, numpy out (either version) ------------------------------

def _launchers(launchers):
    """The module whose launchers run: this one (None), or version 2's, which calls these host
    functions with itself (kernels/per_step_update_trap_v2.py imports this module, not the reverse)."""
    return sys.modules[__name__] if launchers is None else launchers


def _as(a, dtype):
    return np.ascontiguousarray(a, dtype=dtype)


def conv1d_forward(x, w, b, stride, padding, launchers=None):
    """out (N, C_out, L_out) = conv1d(x, w, b), cross-correlation like torch's."""
    x = np.ascontiguousarray(x)
    (N, _, L), (C_out, _, K) = x.shape, w.shape
    d_out = cuda.device_array((N, C_out, (L + 2 * padding - K) // stride + 1), dtype=x.dtype)
    _launchers(launchers).conv1d_forward_device(cuda.to_device(x), cuda.to_device(_as(w, x.dtype)),
                                                cuda.to_device(_as(b, x.dtype)), stride, padding, d_out)
    return d_out.copy_to_host()


def conv1d_backward_data(dout, w, input_length, stride, padding, launchers=None):
    """dx (N, C_in, L) with L = input_length, gathered: no two threads write one element."""
    dout = np.ascontiguousarray(dout)
    d_dx = cuda.device_array((dout.shape[0], w.shape[1], int(input_length)), dtype=dout.dtype)
    _launchers(launchers).conv1d_backward_data_device(cuda.to_device(dout), cuda.to_device(_as(w, dout.dtype)),
                                                      stride, padding, d_dx)
    return d_dx.copy_to_host()


def conv1d_backward_weight(dout, x, kernel_size, stride, padding, launchers=None):
    """dw (C_out, C_in, K): for each weight, the sum over batch and positions, in two stages."""
    x = np.ascontiguousarray(x)
    (N, C_in, _), (_, C_out, L_out) = x.shape, dout.shape
    values, launch = C_out * C_in * int(kernel_size), _launchers(launchers)
    d_partials = cuda.device_array((values, launch.partials_per_value(N * L_out)), dtype=x.dtype)
    d_dw = cuda.device_array(values, dtype=x.dtype)
    launch.conv1d_backward_weight_device(cuda.to_device(_as(dout, x.dtype)), cuda.to_device(x), kernel_size, stride,
                                         padding, d_partials, d_dw)
    return d_dw.copy_to_host().reshape(C_out, C_in, int(kernel_size))


def conv1d_backward_bias(dout, launchers=None):
    """db (C_out,): the sum of dout over batch and positions, in two stages."""
    dout = np.ascontiguousarray(dout)
    (N, C_out, L_out), launch = dout.shape, _launchers(launchers)
    d_partials = cuda.device_array((C_out, launch.bias_parts(N, L_out)), dtype=dout.dtype)
    d_db = cuda.device_array(C_out, dtype=dout.dtype)
    launch.conv1d_backward_bias_device(cuda.to_device(dout), d_partials, d_db)
    return d_db.copy_to_host()


def conv1d_backward(dout, x, w, stride, padding, launchers=None):
    """(dx, dw, db), the same contract as the solution's conv1d_backward."""
    return (conv1d_backward_data(dout, w, x.shape[2], stride, padding, launchers),
            conv1d_backward_weight(dout, x, w.shape[2], stride, padding, launchers),
            conv1d_backward_bias(dout, launchers))


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("per_step_update_trap"))
