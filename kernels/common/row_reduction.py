"""One block reduces one row: the device helpers kernels/softmax_ce.py and
kernels/reparameterisation.py share (a softmax's max and sum, a dot product).

Each thread first folds its strided share of the row into a running (max, sum of exp(x - max))
pair with ``online_add``, an ONLINE softmax: the old sum is rescaled by exp(m_old - m_new)
whenever the max grows, so no exp ever sees a positive argument (finite for |x| ~ 1e4). Then
``block_max_sum`` merges the block's TPB pairs, and ``block_sum`` adds plain sums: each warp
by register shuffles (``shfl_down_sync``, five steps, lane 0 holds the warp's result), the
warps' results through shared slots, once more by warp 0, and thread 0's answer handed to all
through slot 0: three barriers, where a shared-memory tree takes log2(TPB) + 1 (issue 34;
blocks under a warp keep the tree). Every thread of the block must call the block functions
(they hold barriers), with TPB a power of two and shared arrays of TPB.
Run: they are tested through their kernels (tests/kernels/test_softmax_ce_kernels.py,
test_reparameterisation_kernels.py), under the simulator and the race checker.
"""
import math

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.common.patterns import FULL_MASK, WARP, warp_sum


@cuda.jit(device=True)
def online_add(m, s, x, one):
    """(m, s) with x folded in: m the running max, s = sum exp(seen - m); one is 1 in x's dtype."""
    if x > m:
        return x, s * math.exp(m - x) + one  # rescale the old sum to the new max
    return m, s + math.exp(x - m)


@cuda.jit(device=True)
def online_merge(m_a, s_a, m_b, s_b):
    """Merge two partial (max, sum of exp(x - max)) pairs into one (exponents stay <= 0)."""
    m = max(m_a, m_b)
    return m, s_a * math.exp(m_a - m) + s_b * math.exp(m_b - m)


@cuda.jit(device=True)
def warp_max_sum(m, s):
    """The warp's merged (max, sum) pair, in lane 0: five shuffle steps."""
    offset = 16
    while offset > 0:
        m, s = online_merge(m, s, cuda.shfl_down_sync(FULL_MASK, m, offset), cuda.shfl_down_sync(FULL_MASK, s, offset))
        offset //= 2
    return m, s


@cuda.jit(device=True)
def block_max_sum(shared_m, shared_s, m, s, tid, tpb):
    """The row's (max, sum of exp(x - max)) from every thread's pair, seen by every thread."""
    if tpb < WARP:
        return _tree_max_sum(shared_m, shared_s, m, s, tid, tpb)
    m, s = warp_max_sum(m, s)
    if tid % WARP == 0:
        shared_m[tid // WARP], shared_s[tid // WARP] = m, s
    cuda.syncthreads()
    if tid < WARP:
        here = tid < tpb // WARP                               # a slot per warp; the rest merge nothing
        m, s = warp_max_sum(shared_m[tid] if here else shared_m[0], shared_s[tid] if here else s - s)
    cuda.syncthreads()                                         # the slots are read before slot 0 is overwritten
    if tid == 0:
        shared_m[0], shared_s[0] = m, s
    cuda.syncthreads()
    return shared_m[0], shared_s[0]


@cuda.jit(device=True)
def block_sum(shared, value, tid, tpb):
    """The sum of every thread's value, seen by every thread."""
    if tpb < WARP:
        return _tree_sum(shared, value, tid, tpb)
    value = warp_sum(value)
    if tid % WARP == 0:
        shared[tid // WARP] = value
    cuda.syncthreads()
    if tid < WARP:
        value = warp_sum(shared[tid] if tid < tpb // WARP else value - value)
    cuda.syncthreads()
    if tid == 0:
        shared[0] = value
    cuda.syncthreads()
    return shared[0]


# blocks smaller than a warp: the shared-memory tree -------------------------------------------
@cuda.jit(device=True)
def _tree_max_sum(shared_m, shared_s, m, s, tid, tpb):
    shared_m[tid] = m
    shared_s[tid] = s
    cuda.syncthreads()
    stride = tpb // 2
    while stride > 0:
        if tid < stride:
            m, s = online_merge(shared_m[tid], shared_s[tid], shared_m[tid + stride], shared_s[tid + stride])
            shared_m[tid] = m
            shared_s[tid] = s
        cuda.syncthreads()
        stride //= 2
    return shared_m[0], shared_s[0]


@cuda.jit(device=True)
def _tree_sum(shared, value, tid, tpb):
    shared[tid] = value
    cuda.syncthreads()
    stride = tpb // 2
    while stride > 0:
        if tid < stride:
            shared[tid] += shared[tid + stride]
        cuda.syncthreads()
        stride //= 2
    return shared[0]
