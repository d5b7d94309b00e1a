# question: mlp_backprop
# expect: trap=bias-not-summed
# The bias gradients are means over the batch; the 1 / N is already inside dout.
import numpy as np


def mse_loss(out, y):
    n = out.shape[0]
    return 0.5 * float(np.sum((out - y) ** 2)) / n, (out - y) / n


def mlp_forward(x, W1, b1, W2, b2):
    z = x @ W1 + b1
    h = np.maximum(z, 0.0)
    return h @ W2 + b2, h, z


def mlp_backward(dout, x, z, h, W1, W2):
    dW2, db2 = h.T @ dout, dout.mean(axis=0)
    dz = (dout @ W2.T) * (z > 0)
    return dz @ W1.T, x.T @ dz, dz.mean(axis=0), dW2, db2
