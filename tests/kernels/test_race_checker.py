"""Planted bugs for the race and barrier checker (grader/sandbox/race_checker.py): each flag it
raises is caught on a kernel written to have that bug, and its fixed twin is not flagged."""
import numpy as np
import pytest
from numba import cuda

from conftest import REAL_GPU
from backprop_traps.grader.sandbox import race_checker

pytestmark = [pytest.mark.races_expected,  # these tests read the flags themselves
              pytest.mark.skipif(REAL_GPU, reason="the race checker logs the Numba CUDA simulator's threads: "
                                                  "on a real GPU compute-sanitizer's racecheck does this "
                                                  "(benchmarks/gpu_session.py)")]
if not REAL_GPU:
    race_checker.install()  # idempotent: also with BACKPROP_TRAPS_NO_RACE_CHECK=1


@cuda.jit
def scatter_plain(src, index, out):
    i = cuda.grid(1)
    if i < src.shape[0]:
        out[index[i]] += src[i]  # read, add, write: two threads on one index lose an update


@cuda.jit
def scatter_atomic(src, index, out):
    i = cuda.grid(1)
    if i < src.shape[0]:
        cuda.atomic.add(out, index[i], src[i])


@cuda.jit
def block_sum(x, out):
    shared = cuda.shared.array(8, np.float64)
    t = cuda.threadIdx.x
    shared[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    if t == 0:
        acc = shared[0]
        for j in range(1, 8):
            acc += shared[j]
        out[cuda.blockIdx.x] = acc


@cuda.jit
def block_sum_no_barrier(x, out):
    shared = cuda.shared.array(8, np.float64)
    t = cuda.threadIdx.x
    shared[t] = x[cuda.grid(1)]
    if t == 0:  # reads the others' slots with no syncthreads in between
        acc = shared[0]
        for j in range(1, 8):
            acc += shared[j]
        out[cuda.blockIdx.x] = acc


@cuda.jit
def early_exit_then_barrier(x, out):
    shared = cuda.shared.array(8, np.float64)
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return  # the threads past the end never reach the barrier below
    shared[cuda.threadIdx.x] = x[i]
    cuda.syncthreads()
    out[i] = shared[cuda.threadIdx.x]


@cuda.jit
def reads_unwritten_shared(x, out):
    shared = cuda.shared.array(8, np.float64)
    t = cuda.threadIdx.x
    if t < 4:
        shared[t] = x[t]
    cuda.syncthreads()
    out[t] = shared[t]  # threads 4..7 read slots nobody wrote


@cuda.jit
def left_neighbour(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i - 1]  # i = 0 reads x[-1]: the last element here, outside x on a GPU


@cuda.jit
def one_block_writes_another_reads(flag, out):
    if cuda.blockIdx.x == 0 and cuda.threadIdx.x == 0:
        flag[0] = 1.0
    if cuda.blockIdx.x == 1 and cuda.threadIdx.x == 0:
        out[0] = flag[0]  # blocks are never ordered inside one launch


@cuda.jit
def scatter_read_then_exch(src, index, out):
    i = cuda.grid(1)
    if i < src.shape[0]:
        old = cuda.atomic.add(out, index[i], 0)  # an atomic read ...
        cuda.atomic.exch(out, index[i], old + src[i])  # ... and an atomic store: not one indivisible add


@cuda.jit
def flags_by_exch(found, out):
    i = cuda.grid(1)
    cuda.atomic.exch(found, 0, 1.0)  # every thread stores the same value: benign
    out[i] = 1.0


def kinds(log):
    return {f["kind"] for f in log.flags}


def test_plain_scatter_with_repeated_indices_is_a_race_whatever_the_schedule():
    src, index = np.arange(1.0, 9.0), np.array([0, 1, 1, 2, 3, 3, 3, 4])
    d_out = cuda.to_device(np.zeros(5))
    with race_checker.checking() as log:
        scatter_plain[1, 8](cuda.to_device(src), cuda.to_device(index), d_out)
    # the simulator may well have summed correctly; the log still shows two unordered writers
    assert {"write-write", "read-write"} & kinds(log)
    flag = log.flags[0]
    assert flag["array"] == "out" and flag["kernel"] == "scatter_plain"
    assert flag["index"] in ([1], [3]) and "cuda.atomic" in flag["message"]


def test_atomic_scatter_and_distinct_indices_are_not_flagged():
    src = np.arange(1.0, 9.0)
    with race_checker.checking() as log:
        scatter_atomic[1, 8](cuda.to_device(src), cuda.to_device(np.array([0, 1, 1, 2, 3, 3, 3, 4])),
                             cuda.to_device(np.zeros(5)))
        scatter_plain[1, 8](cuda.to_device(src), cuda.to_device(np.arange(8)), cuda.to_device(np.zeros(8)))
    assert log.flags == [] and log.launches == 2 and log.accesses >= 40


def test_shared_reduction_with_a_barrier_is_clean_and_without_one_is_a_race():
    x, out = cuda.to_device(np.arange(16.0)), cuda.to_device(np.zeros(2))
    with race_checker.checking() as log:
        block_sum[2, 8](x, out)
    assert log.flags == []
    assert out.copy_to_host().tolist() == [28.0, 92.0]
    with race_checker.checking() as log:
        block_sum_no_barrier[2, 8](x, out)
    assert "read-write" in kinds(log)
    assert any("shared array" in f["array"] for f in log.flags)


def test_a_barrier_skipped_by_some_threads_is_flagged():
    x = cuda.to_device(np.arange(5.0))
    with race_checker.checking() as log:
        early_exit_then_barrier[1, 8](x, cuda.to_device(np.zeros(5)))
    flags = [f for f in log.flags if f["kind"] == "divergent-barrier"]
    assert flags and "3 thread(s)" in flags[0]["message"]


def test_shared_memory_read_before_any_write_is_flagged():
    with race_checker.checking() as log:
        reads_unwritten_shared[1, 8](cuda.to_device(np.arange(8.0)), cuda.to_device(np.zeros(8)))
    assert kinds(log) == {"uninitialised-shared"}


def test_a_negative_index_is_flagged_though_numpy_wraps_it():
    with race_checker.checking() as log:
        left_neighbour[1, 8](cuda.to_device(np.arange(8.0)), cuda.to_device(np.zeros(8)))
    assert kinds(log) == {"negative-index"}
    assert log.flags[0]["array"] == "x" and "[-1]" in log.flags[0]["message"]


def test_blocks_of_one_launch_are_never_ordered():
    with race_checker.checking() as log:
        one_block_writes_another_reads[2, 4](cuda.to_device(np.zeros(1)), cuda.to_device(np.zeros(1)))
    assert "read-write" in kinds(log)


def test_flags_stay_in_the_innermost_block(race_log):
    with race_checker.checking() as inner:
        left_neighbour[1, 8](cuda.to_device(np.arange(8.0)), cuda.to_device(np.zeros(8)))
    assert inner.flags and race_log.flags == []


def test_the_kernel_tests_are_really_checked(race_log):
    from backprop_traps.kernels import routing_trap
    x = np.random.default_rng(0).normal(size=(1, 2, 7, 7))
    _, argmax = routing_trap.maxpool2d_forward(x, 3, 2)
    routing_trap.maxpool2d_backward_atomic(np.ones(argmax.shape), argmax, x.shape, 3, 2)
    assert race_log.launches == 2 and race_log.accesses > 100 and race_log.flags == []


def test_an_atomic_read_and_an_atomic_exchange_are_a_lost_update_not_an_atomic_add():
    """Issue 35: an atomic.exch stores; beside another thread's write the last writer wins, so two
    atomics that together read, add and store are flagged, while a flag set by exch is not."""
    src, index = np.arange(1, 9), np.array([0, 1, 1, 2, 3, 3, 3, 4])
    with race_checker.checking() as log:
        scatter_read_then_exch[1, 8](cuda.to_device(src), cuda.to_device(index),
                                     cuda.to_device(np.zeros(5, dtype=np.int64)))
    assert kinds(log) == {"write-write"} and "cuda.atomic.exch" in log.flags[0]["message"]
    with race_checker.checking() as log:
        flags_by_exch[1, 8](cuda.to_device(np.zeros(1, dtype=np.int64)), cuda.to_device(np.zeros(8)))
    assert log.flags == []


def test_an_atomic_a_gpu_build_refuses_for_the_arrays_dtype_fails_as_it_would_there():
    """numba-cuda compiles exch and cas for integer arrays only: a float64 read-then-exch
    scatter (or a compare-and-swap without a retry loop) does not build for a GPU."""
    src, index = np.arange(1.0, 9.0), np.array([0, 1, 1, 2, 3, 3, 3, 4])
    with pytest.raises(TypeError, match="cuda.atomic.exch on a float64 array does not compile for a GPU"):
        with race_checker.checking():
            scatter_read_then_exch[1, 8](cuda.to_device(src), cuda.to_device(index), cuda.to_device(np.zeros(5)))


def test_the_log_counts_threads_and_keeps_who_wrote_what_when_asked():
    src, index = np.arange(1.0, 9.0), np.array([0, 1, 1, 2, 3, 3, 3, 4])
    with race_checker.checking(keep_writes=True) as log:
        scatter_atomic[2, 8](cuda.to_device(src), cuda.to_device(index), cuda.to_device(np.zeros(5)))
    assert log.threads == 16 and log.launches == 1
    # (argument position, flat element, block, thread): thread t of block 0 adds into out[index[t]]
    assert {(p, f, b[0] * 8 + t[0]) for p, f, b, t in log.writes} == {(2, int(index[i]), i) for i in range(8)}
    with race_checker.checking() as log:
        scatter_atomic[1, 8](cuda.to_device(src), cuda.to_device(index), cuda.to_device(np.zeros(5)))
    assert log.writes is None
