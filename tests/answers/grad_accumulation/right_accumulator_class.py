# question: grad_accumulation
# expect: full
# Right, written as a training loop would: an accumulator object made per call, zero() once,
# add() per micro-batch, and np.split at multiples of micro_batch (views, the last one shorter).
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


class GradAccumulator:
    def __init__(self, params):
        self.shapes = [p.shape for p in params]
        self.zero()

    def zero(self):
        self.buffers = [np.zeros(s, dtype=np.float64) for s in self.shapes]

    def add(self, grads, weight):
        for buffer, g in zip(self.buffers, grads):
            buffer += weight * g


def accumulated_grads(params, x, y, micro_batch):
    n = x.shape[0]
    acc = GradAccumulator(params)
    cuts = list(range(micro_batch, n, micro_batch))
    for x_k, y_k in zip(np.split(x, cuts), np.split(y, cuts)):
        acc.add(mlp_grads(params, x_k, y_k), len(x_k) / n)
    return tuple(acc.buffers)


def minibatch_noise(params, x, y, B):
    # the rows' own gradients stacked, then np.var (ddof 0 by default) over the rows, over B
    stacked = zip(*(mlp_grads(params, x[i:i + 1], y[i:i + 1]) for i in range(x.shape[0])))
    return tuple(np.var(np.stack(g), axis=0) / B for g in stacked)
