# question: mlp_backprop
# expect: full
# One example at a time, with explicit loops over the batch: the per-example gradients added up.
import numpy as np


def mse_loss(out, y):
    n = out.shape[0]
    diff = out - y
    return 0.5 * float(np.sum(diff ** 2)) / n, diff / n


def mlp_forward(x, W1, b1, W2, b2):
    z = np.zeros((x.shape[0], W1.shape[1]))
    for i in range(x.shape[0]):
        z[i] = x[i] @ W1 + b1
    h = np.maximum(z, 0.0)
    out = np.stack([h[i] @ W2 + b2 for i in range(x.shape[0])])
    return out, h, z


def mlp_backward(dout, x, z, h, W1, W2):
    dx = np.zeros_like(x)
    dW1, db1 = np.zeros_like(W1), np.zeros(W1.shape[1])
    dW2, db2 = np.zeros_like(W2), np.zeros(W2.shape[1])
    for i in range(x.shape[0]):
        dW2 += np.outer(h[i], dout[i])
        db2 += dout[i]
        dh = W2 @ dout[i]
        dz = dh * (z[i] > 0)
        dW1 += np.outer(x[i], dz)
        db1 += dz
        dx[i] = W1 @ dz
    return dx, dW1, db1, dW2, db2
