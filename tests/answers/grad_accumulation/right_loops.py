# question: grad_accumulation
# expect: full
# Right, with Python loops: every row's own gradient added into the micro-batch's sum, every
# micro-batch's sum into the buffers, divided by N (another order of float64 additions).
import numpy as np


def mlp_loss(params, x, y):
    W1, b1, W2, b2 = params
    diff = np.maximum(x @ W1 + b1, 0.0) @ W2 + b2 - y
    return 0.5 * float(np.sum(diff * diff)) / x.shape[0]


def mlp_grads(params, x, y):
    W1, b1, W2, b2 = params
    z = x @ W1 + b1
    h = np.maximum(z, 0.0)
    dout = (h @ W2 + b2 - y) / x.shape[0]
    dz = (dout @ W2.T) * (z > 0)
    return x.T @ dz, dz.sum(axis=0), h.T @ dout, dout.sum(axis=0)


def accumulated_grads(params, x, y, micro_batch):
    n = x.shape[0]
    total = [np.zeros(p.shape) for p in params]
    for start in range(0, n, micro_batch):
        part = [np.zeros(p.shape) for p in params]
        for row in range(start, min(start + micro_batch, n)):
            for s, g in zip(part, mlp_grads(params, x[row:row + 1], y[row:row + 1])):
                s += g
        for buffer, s in zip(total, part):
            buffer += s / n
    return tuple(total)


def minibatch_noise(params, x, y, B):
    # two passes in plain loops: the mean of the rows' own gradients, then their mean square
    # deviation from it (over N: every row is a possible draw), over B
    n = x.shape[0]
    rows = [mlp_grads(params, x[i:i + 1], y[i:i + 1]) for i in range(n)]
    out = []
    for j, p in enumerate(params):
        mean = np.zeros(p.shape)
        for row in rows:
            mean += row[j] / n
        square = np.zeros(p.shape)
        for row in rows:
            square += (row[j] - mean) ** 2 / n
        out.append(square / B)
    return tuple(out)
