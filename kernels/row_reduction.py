"""One block reduces one row: the device helpers kernels/softmax_ce.py and
kernels/reparameterisation.py share (a softmax's max and sum, a dot product).

Each thread first folds its strided share of the row into a running (max, sum of exp(x - max))
pair with ``online_add``, an ONLINE softmax: the old sum is rescaled by exp(m_old - m_new)
whenever the max grows, so no exp ever sees a positive argument (finite for |x| ~ 1e4). Then
``block_max_sum`` merges the block's TPB pairs in shared memory, a tree of log2(TPB) steps,
and ``block_sum`` does the same for plain sums. Every thread of the block must call the
block functions (they hold barriers), with TPB a power of two and shared arrays of TPB.
Run: they are tested through their kernels (tests/kernels/test_softmax_ce_kernels.py,
test_reparameterisation_kernels.py), under the simulator and the race checker.
"""
import math

from backprop_traps.kernels.device import cuda


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
def block_max_sum(shared_m, shared_s, m, s, tid, tpb):
    """The row's (max, sum of exp(x - max)) from every thread's pair, seen by every thread."""
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
def block_sum(shared, value, tid, tpb):
    """The sum of every thread's value, seen by every thread."""
    shared[tid] = value
    cuda.syncthreads()
    stride = tpb // 2
    while stride > 0:
        if tid < stride:
            shared[tid] += shared[tid + stride]
        cuda.syncthreads()
        stride //= 2
    return shared[0]
