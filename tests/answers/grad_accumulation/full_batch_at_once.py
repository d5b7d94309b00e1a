# question: grad_accumulation
# Trap full-batch-at-once: the right numbers, but the forward runs on the whole batch
# first (its activations kept), and only the backward goes micro-batch by micro-batch.
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
    W1, b1, W2, b2 = params
    n = x.shape[0]
    z = x @ W1 + b1                          # N, H: the whole batch's activations
    h = np.maximum(z, 0.0)
    total = [np.zeros_like(p) for p in params]
    for start in range(0, n, micro_batch):
        s = slice(start, start + micro_batch)
        dout = (h[s] @ W2 + b2 - y[s]) / n
        dz = (dout @ W2.T) * (z[s] > 0)
        for buffer, g in zip(total, (x[s].T @ dz, dz.sum(axis=0), h[s].T @ dout, dout.sum(axis=0))):
            buffer += g
    return tuple(total)
