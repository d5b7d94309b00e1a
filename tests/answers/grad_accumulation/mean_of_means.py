# question: grad_accumulation
# Trap mean-of-means: each micro-batch's mean gradient divided by the number of
# micro-batches K (the usual recipe: loss / accumulation_steps), right only when every micro-batch
# has the same number of rows.
# A complete answer: every function is right but this one mistake.
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
    steps = -(-n // micro_batch)
    total = [np.zeros_like(p) for p in params]
    for start in range(0, n, micro_batch):
        grads = mlp_grads(params, x[start:start + micro_batch], y[start:start + micro_batch])
        for buffer, g in zip(total, grads):
            buffer += g / steps
    return tuple(total)
