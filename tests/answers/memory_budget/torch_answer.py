# question: memory_budget
# A correct answer written with PyTorch, in the style of RevNet and Reformer's reversible
# layers: the forward under torch.no_grad() keeps only the current pair; the backward rebuilds a
# block's inputs from its outputs, runs that block's forward again under autograd, and lets
# torch.autograd.grad give its gradients. The plan is a dynamic programme in plain Python.
import numpy as np
import torch


def checkpoint_plan(sizes, costs, budget):
    L, B = len(sizes), int(min(budget, int(sum(sizes))))
    best = [[0.0] * (B + 1) for _ in range(L + 1)]
    for i in range(1, L + 1):
        s, c = int(sizes[i - 1]), float(costs[i - 1])
        for m in range(B + 1):
            best[i][m] = best[i - 1][m]
            if s <= m and best[i - 1][m - s] + c > best[i][m]:
                best[i][m] = best[i - 1][m - s] + c
    keep, m = np.zeros(L, dtype=bool), B
    for i in range(L, 0, -1):
        if best[i][m] != best[i - 1][m]:
            keep[i - 1] = True
            m -= int(sizes[i - 1])
    return keep


def _t(*arrays):
    return [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]


def _block(x1, x2, Wf, bf, Wg, bg):
    y1 = x1 + torch.tanh(x2 @ Wf + bf)
    return y1, x2 + torch.tanh(y1 @ Wg + bg)


def rev_forward(x1, x2, Wf, bf, Wg, bg):
    with torch.no_grad():
        return tuple(y.numpy() for y in _block(*_t(x1, x2, Wf, bf, Wg, bg)))


def rev_inverse(y1, y2, Wf, bf, Wg, bg):
    y1, y2, Wf, bf, Wg, bg = _t(y1, y2, Wf, bf, Wg, bg)
    with torch.no_grad():
        x2 = y2 - torch.tanh(y1 @ Wg + bg)
        x1 = y1 - torch.tanh(x2 @ Wf + bf)
    return x1.numpy(), x2.numpy()


def _backward(dy1, dy2, y1, y2, params):
    x1, x2 = (torch.from_numpy(a).requires_grad_() for a in rev_inverse(y1, y2, *params))
    weights = [torch.from_numpy(np.ascontiguousarray(p)).requires_grad_() for p in params]
    out1, out2 = _block(x1, x2, *weights)
    grads = torch.autograd.grad((out1, out2), [x1, x2, *weights], (torch.from_numpy(dy1), torch.from_numpy(dy2)))
    return (x1.detach().numpy(), x2.detach().numpy(), *(g.numpy() for g in grads))


def rev_backward(dy1, dy2, y1, y2, Wf, bf, Wg, bg):
    return _backward(dy1, dy2, y1, y2, (Wf, bf, Wg, bg))


def revnet_loss_and_grads(blocks, x1, x2, t1, t2):
    for params in blocks:
        x1, x2 = rev_forward(x1, x2, *params)
    N = x1.shape[0]
    loss = 0.5 * (np.sum((x1 - t1) ** 2) + np.sum((x2 - t2) ** 2)) / N
    dy1, dy2 = (x1 - t1) / N, (x2 - t2) / N
    grads = []
    for params in reversed(blocks):
        x1, x2, dy1, dy2, *g = _backward(dy1, dy2, x1, x2, params)
        grads.append(tuple(g))
    return float(loss), grads[::-1]


def offload_step_time(nbytes, compute_s, bandwidth_gb_s, overlap):
    transfer_s = 2 * nbytes / (bandwidth_gb_s * 1e9)
    return transfer_s, (max(compute_s, transfer_s) if overlap else compute_s + transfer_s)
