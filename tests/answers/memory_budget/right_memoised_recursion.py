# question: memory_budget
# expect: full
# A right answer written the textbook way: the plan as a memoised recursion over (op, budget
# left), the block's backward spelled out with einsum, the stack walked with a while loop.
from functools import lru_cache

import numpy as np


def checkpoint_plan(sizes, costs, budget):
    sizes = [int(s) for s in sizes]
    costs = [float(c) for c in costs]

    @lru_cache(maxsize=None)
    def avoided(i, left):  # the most recompute avoided with ops i.. and `left` units
        if i == len(sizes):
            return 0.0
        skip = avoided(i + 1, left)
        if sizes[i] <= left:
            return max(skip, costs[i] + avoided(i + 1, left - sizes[i]))
        return skip

    keep, left = [], min(int(budget), sum(sizes))
    for i in range(len(sizes)):
        take = sizes[i] <= left and costs[i] + avoided(i + 1, left - sizes[i]) > avoided(i + 1, left)
        keep.append(take)
        left -= sizes[i] if take else 0
    return np.array(keep, dtype=bool)


def rev_forward(x1, x2, Wf, bf, Wg, bg):
    y1 = x1 + np.tanh(np.einsum("nd,de->ne", x2, Wf) + bf)
    return y1, x2 + np.tanh(np.einsum("nd,de->ne", y1, Wg) + bg)


def rev_inverse(y1, y2, Wf, bf, Wg, bg):
    x2 = y2 - np.tanh(np.einsum("nd,de->ne", y1, Wg) + bg)
    return y1 - np.tanh(np.einsum("nd,de->ne", x2, Wf) + bf), x2


def rev_backward(dy1, dy2, y1, y2, Wf, bf, Wg, bg):
    x1, x2 = rev_inverse(y1, y2, Wf, bf, Wg, bg)
    G = np.tanh(np.einsum("nd,de->ne", y1, Wg) + bg)
    F = np.tanh(np.einsum("nd,de->ne", x2, Wf) + bf)
    dzg = dy2 * (1 - G ** 2)
    dy1_all = dy1 + np.einsum("ne,de->nd", dzg, Wg)
    dzf = dy1_all * (1 - F ** 2)
    return (x1, x2, dy1_all, dy2 + np.einsum("ne,de->nd", dzf, Wf),
            np.einsum("nd,ne->de", x2, dzf), dzf.sum(0), np.einsum("nd,ne->de", y1, dzg), dzg.sum(0))


def revnet_loss_and_grads(blocks, x1, x2, t1, t2):
    i = 0
    while i < len(blocks):
        x1, x2 = rev_forward(x1, x2, *blocks[i])
        i += 1
    N = len(x1)
    e1, e2 = x1 - t1, x2 - t2
    loss = 0.5 * float((e1 * e1).sum() + (e2 * e2).sum()) / N
    d1, d2, grads = e1 / N, e2 / N, []
    while i > 0:
        i -= 1
        x1, x2, d1, d2, dWf, dbf, dWg, dbg = rev_backward(d1, d2, x1, x2, *blocks[i])
        grads.insert(0, (dWf, dbf, dWg, dbg))
    return loss, grads


def offload_step_time(nbytes, compute_s, bandwidth_gb_s, overlap):
    one_way = nbytes / (bandwidth_gb_s * 1e9)
    transfer = one_way + one_way  # to the host and back
    return transfer, (compute_s if compute_s > transfer else transfer) if overlap else compute_s + transfer
