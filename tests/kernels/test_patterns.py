"""kernels/common/patterns.py under the simulator (and on a GPU with BACKPROP_TRAPS_REAL_GPU=1):
the warp-shuffle sums, the 128-bit loads and stores, the flat unsigned offset; and the
simulator's own warp shuffle (kernels/runtime/simulator_fixes.py). Blocks stay at 64 threads, but for
the simulator's refusals (issue 45) of what a GPU gets wrong: shuffles in a partial warp or
with a partial mask, vector accesses to strided, many-axis or misaligned arrays."""
import numpy as np
import pytest

from conftest import REAL_GPU
from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.common import patterns
from backprop_traps.kernels.common.patterns import (FULL_MASK, aligned, block_allsum2, block_sum, flat4, load4, store4, u64,
                                             vector_bytes, warp_max, warp_sum)


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


SIMULATOR_ONLY = pytest.mark.skipif(REAL_GPU, reason="the simulator's refusal: on a GPU this is undefined or faults")


@SIMULATOR_ONLY
@pytest.mark.parametrize("view", ["strided", "two axes"])
def test_a_vector_access_to_a_strided_or_many_axis_array_is_refused(view):
    """On a GPU load4/store4 read the array flat from its start, whatever its strides: x[::2]
    would read x[0:4], not x[0], x[2], x[4], x[6]. The simulator honours strides, so it refuses."""
    d_x = cuda.to_device(np.arange(32, dtype=np.float32))
    source = d_x[::2] if view == "strided" else cuda.to_device(np.arange(16, dtype=np.float32).reshape(2, 8))
    with pytest.raises(Exception, match="ignoring strides"):
        double4[1, 4](source, cuda.to_device(np.zeros(16, np.float32)))
    assert not aligned(d_x[::2])


@SIMULATOR_ONLY
def test_16_bit_vectors_need_8_byte_alignment_and_no_more():
    """float16's four elements are one 64-bit vector: 8-byte aligned is enough, 2 bytes off faults."""
    d_h = cuda.to_device(np.arange(24, dtype=np.float16))
    d_y = cuda.to_device(np.zeros(16, np.float16))
    double4[1, 4](d_h[4:20], d_y)  # 8 bytes past the allocation's start
    np.testing.assert_array_equal(d_y.copy_to_host(), 2 * np.arange(4, 20, dtype=np.float16))
    with pytest.raises(Exception, match="8-byte boundary"):
        double4[1, 4](d_h[1:17], d_y)
    assert aligned(d_h[4:]) and not aligned(d_h[1:])


def test_aligned_checks_the_layout_as_well_as_the_start():
    d_x = cuda.to_device(np.zeros((8, 12), np.float32))
    assert aligned(d_x, d_x[2:], d_x.reshape(96)[4:])   # rows of 48 bytes; 16 bytes in
    assert not aligned(d_x[:, :8])                      # rows with gaps: strided
    assert not aligned(d_x.T) and not aligned(d_x, d_x[:, 1:])
    assert aligned(cuda.to_device(np.zeros((1, 8), np.float32))[:, :4])  # one row: no gap to skip
    assert [vector_bytes(n) for n in (1, 2, 4, 8)] == [4, 8, 16, 16]


def test_the_gpu_vector_instructions_claim_only_their_own_alignment():
    """A 64-bit float16 vector claimed 16 bytes (issue 45): the compiler may then merge two of
    them into one 128-bit access, which faults where only 8 bytes are guaranteed."""
    import inspect
    source = inspect.getsource(patterns._gpu_access)
    assert "align=16" not in source and source.count("align=alignment(") == 2
    assert "vector_bytes(array_type.dtype.bitwidth // 8)" in source


@cuda.jit
def partial_warp_sum(x, out):
    # x, out: one element per thread; every thread calls warp_sum
    tid = cuda.threadIdx.x
    out[tid] = warp_sum(x[tid])


@cuda.jit
def half_mask_shuffle(x, out):
    tid = cuda.threadIdx.x
    out[tid] = cuda.shfl_down_sync(0x0000FFFF, x[tid], 1)


@SIMULATOR_ONLY
def test_a_shuffle_in_a_partial_warp_is_refused():
    """48 threads: warp 1 has 16 lanes, and the full mask names 32 (undefined on a GPU)."""
    x = cuda.to_device(np.ones(48))
    with pytest.raises(Exception, match="partial warp: a block of 48 threads leaves warp 1 with 16 lanes"):
        partial_warp_sum[1, 48](x, cuda.to_device(np.zeros(48)))
    d_out = cuda.to_device(np.zeros(64))
    partial_warp_sum[1, 64](cuda.to_device(np.ones(64)), d_out)  # whole warps: lane 0 of each holds 32
    assert d_out.copy_to_host()[[0, 32]].tolist() == [32.0, 32.0]


@SIMULATOR_ONLY
def test_a_shuffle_with_a_partial_mask_is_refused():
    assert FULL_MASK == 0xFFFFFFFF
    with pytest.raises(Exception, match="mask 0xffff: the simulator takes only the full mask"):
        half_mask_shuffle[1, 32](cuda.to_device(np.ones(32)), cuda.to_device(np.zeros(32)))


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
