# question: grad_accumulation
# expect: full
# Right, in the other form: each micro-batch's SUMMED gradient (its mean times its rows) added
# into the buffers, and the total divided once by N at the end.
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
        x_k, y_k = x[start:start + micro_batch], y[start:start + micro_batch]
        for buffer, g in zip(total, mlp_grads(params, x_k, y_k)):
            buffer += g * x_k.shape[0]
    return tuple(t / n for t in total)


def minibatch_noise(params, x, y, B):
    # E[g^2] - E[g]^2 per entry, from running sums of the rows' gradients and their squares
    n = x.shape[0]
    total = [np.zeros(p.shape) for p in params]
    squares = [np.zeros(p.shape) for p in params]
    for i in range(n):
        for t, s, g in zip(total, squares, mlp_grads(params, x[i:i + 1], y[i:i + 1])):
            t += g
            s += g * g
    return tuple(np.maximum(s / n - (t / n) ** 2, 0.0) / B for t, s in zip(total, squares))
