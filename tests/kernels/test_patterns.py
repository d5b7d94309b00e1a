"""kernels/patterns.py under the simulator (and on a GPU with BACKPROP_TRAPS_REAL_GPU=1):
the warp-shuffle sums, the 128-bit loads and stores, the flat unsigned offset; and the
simulator's own warp shuffle (kernels/simulator_fixes.py). Blocks stay at 64 threads."""
import numpy as np
import pytest

from conftest import REAL_GPU
from backprop_traps.kernels.device import cuda
from backprop_traps.kernels.patterns import (aligned, block_allsum2, block_sum, flat4, load4, store4, u64, warp_max,
                                             warp_sum)


@cuda.jit
def sums(x, warp_out, max_out, block_out):
    # x: 64 (two warps); warp_out, max_out: 2; block_out: 1
    tid = cuda.threadIdx.x
    shared = cuda.shared.array(32, x.dtype)
    v = x[tid]
    w, m = warp_sum(v), warp_max(v)
    if tid % 32 == 0:
        warp_out[tid // 32], max_out[tid // 32] = w, m
    total = block_sum(shared, v, x.dtype.type(0), tid, cuda.blockDim.x)
    if tid == 0:
        block_out[0] = total


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_warp_and_block_sums(dtype):
    x = np.random.default_rng(0).standard_normal(64).astype(dtype)
    outs = [cuda.to_device(np.zeros(n, dtype)) for n in (2, 2, 1)]
    sums[1, 64](cuda.to_device(x), *outs)
    warp, most, block = (o.copy_to_host() for o in outs)
    np.testing.assert_allclose(warp, x.reshape(2, 32).sum(1), rtol=1e-5)
    np.testing.assert_array_equal(most, x.reshape(2, 32).max(1))
    np.testing.assert_allclose(block, [x.sum()], rtol=1e-5)


@cuda.jit
def double4(x, y):
    # x, y: a multiple of 4 elements; thread t reads and writes elements 4t .. 4t + 3
    i = u64(cuda.grid(1)) * u64(4)
    if i < u64(x.size):
        a, b, c, d = load4(x, i)
        store4(y, i, a + a, b + b, c + c, d + d)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_load4_and_store4_move_four_neighbours(dtype):
    x = np.arange(24, dtype=dtype)
    d_y = cuda.to_device(np.zeros(24, dtype))
    double4[2, 4](cuda.to_device(x), d_y)
    np.testing.assert_array_equal(d_y.copy_to_host(), 2 * x)


@pytest.mark.skipif(REAL_GPU, reason="the simulator's check: on a GPU a misaligned vector load faults")
def test_a_misaligned_vector_access_fails_in_the_simulator_as_on_a_gpu():
    d_x = cuda.to_device(np.arange(12, dtype=np.float32))
    with pytest.raises(Exception, match="16-byte boundary"):
        double4[1, 2](d_x[1:9], cuda.to_device(np.zeros(8, np.float32)))
    assert aligned(d_x) and not aligned(d_x[1:])


@cuda.jit
def offsets(out, C, H, W):
    # out: N * C * H * W; thread (w, h, n * C + c) writes its own flat offset
    w, h, plane = cuda.grid(3)
    n, c = plane // C, plane % C
    i = flat4(u64(n), u64(c), u64(h), u64(w), u64(C), u64(H), u64(W))
    out[i] = float(i)


def test_flat4_is_the_row_major_offset():
    N, C, H, W = 2, 3, 4, 5
    d_out = cuda.to_device(np.zeros(N * C * H * W))
    offsets[(1, 1, N * C), (W, H, 1)](d_out, C, H, W)
    np.testing.assert_array_equal(d_out.copy_to_host(), np.arange(N * C * H * W))


@cuda.jit
def allsums(x, out):
    # x: 96 (three warps); out: 2 * 96, every thread's (sum x, sum 2x) over the block
    tid = cuda.threadIdx.x
    shared = cuda.shared.array((2, 32), x.dtype)
    a, b = block_allsum2(shared, x[tid], x[tid] + x[tid], x.dtype.type(0), tid, cuda.blockDim.x)
    out[tid], out[96 + tid] = a, b


def test_block_allsum2_leaves_both_sums_in_every_thread():
    x = np.random.default_rng(1).standard_normal(96)
    d_out = cuda.to_device(np.zeros(192))
    allsums[1, 96](cuda.to_device(x), d_out)
    got = d_out.copy_to_host()
    np.testing.assert_allclose(got[:96], np.full(96, x.sum()), rtol=1e-12)
    np.testing.assert_allclose(got[96:], np.full(96, 2 * x.sum()), rtol=1e-12)
