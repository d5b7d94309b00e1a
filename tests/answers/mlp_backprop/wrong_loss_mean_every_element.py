# question: mlp_backprop
# expect: wrong
# The loss averages over every element (N * D_out), as np.mean does, instead of over rows.
import numpy as np


def mse_loss(out, y):
    return 0.5 * float(np.mean((out - y) ** 2)), (out - y) / out.size


def mlp_forward(x, W1, b1, W2, b2):
    z = x @ W1 + b1
    h = np.maximum(z, 0)
    return h @ W2 + b2, h, z


def mlp_backward(dout, x, z, h, W1, W2):
    dz = (dout @ W2.T) * (z > 0)
    return dz @ W1.T, x.T @ dz, dz.sum(axis=0), h.T @ dout, dout.sum(axis=0)
