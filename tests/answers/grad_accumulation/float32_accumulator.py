# question: grad_accumulation
# float32 buffers: every partial sum is rounded to 24 bits (the result is handed back as
# float64, so only its values show it). Common practice, so no trap is named (issue 22, E4):
# the report says float32 where the contract wants float64.
# expect: unnamed
# not named: float32-accumulator half-precision-accumulator
# says: float32 where the contract wants float64
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
    total = [np.zeros(p.shape, dtype=np.float32) for p in params]
    for start in range(0, n, micro_batch):
        x_k, y_k = x[start:start + micro_batch], y[start:start + micro_batch]
        for buffer, g in zip(total, mlp_grads(params, x_k, y_k)):
            buffer += g * (x_k.shape[0] / n)
    return tuple(t.astype(np.float64) for t in total)
