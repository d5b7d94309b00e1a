# question: memory_budget
# expect: full
# A right answer with a full (L + 1) x (B + 1) table, vectorised along the budget, and a
# generator that hands back each block's inputs as the stack is walked in reverse.
import numpy as np


def checkpoint_plan(sizes, costs, budget):
    L, B = len(sizes), int(min(budget, sizes.sum()))
    table = np.zeros((L + 1, B + 1))
    for i, (s, c) in enumerate(zip(sizes, costs), start=1):
        table[i] = table[i - 1]
        if s <= B:
            table[i, s:] = np.maximum(table[i - 1, s:], table[i - 1, :B + 1 - s] + c)
    keep, m = np.zeros(L, dtype=bool), B
    for i in range(L, 0, -1):
        if table[i, m] > table[i - 1, m]:
            keep[i - 1], m = True, m - sizes[i - 1]
    return keep


def _coupling(a, b, W, bias, sign):
    return a + sign * np.tanh(b @ W + bias)


def rev_forward(x1, x2, Wf, bf, Wg, bg):
    y1 = _coupling(x1, x2, Wf, bf, 1.0)
    return y1, _coupling(x2, y1, Wg, bg, 1.0)


def rev_inverse(y1, y2, Wf, bf, Wg, bg):
    x2 = _coupling(y2, y1, Wg, bg, -1.0)
    return _coupling(y1, x2, Wf, bf, -1.0), x2


def rev_backward(dy1, dy2, y1, y2, Wf, bf, Wg, bg):
    x1, x2 = rev_inverse(y1, y2, Wf, bf, Wg, bg)
    du = dy2 * (1 - np.tanh(y1 @ Wg + bg) ** 2)
    dy1 = dy1 + du @ Wg.T
    dv = dy1 * (1 - np.tanh(x2 @ Wf + bf) ** 2)
    return x1, x2, dy1, dy2 + dv @ Wf.T, x2.T @ dv, dv.sum(0), y1.T @ du, du.sum(0)


def _backwards(blocks, y1, y2, dy1, dy2):
    for block in reversed(blocks):
        y1, y2, dy1, dy2, *grads = rev_backward(dy1, dy2, y1, y2, *block)
        yield tuple(grads)


def revnet_loss_and_grads(blocks, x1, x2, t1, t2):
    for block in blocks:
        x1, x2 = rev_forward(x1, x2, *block)
    n = x1.shape[0]
    loss = (np.sum((x1 - t1) ** 2) + np.sum((x2 - t2) ** 2)) / (2 * n)
    return float(loss), list(_backwards(blocks, x1, x2, (x1 - t1) / n, (x2 - t2) / n))[::-1]


def offload_step_time(nbytes, compute_s, bandwidth_gb_s, overlap):
    t = 2 * nbytes / bandwidth_gb_s / 1e9
    return t, max(t, compute_s) if overlap else t + compute_s
