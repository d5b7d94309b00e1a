# question: mlp_backprop
# expect: trap=no-transpose
# The weight gradients multiply in the wrong order: dout.T @ h is dW2 transposed.
import numpy as np


def mse_loss(out, y):
    n = out.shape[0]
    return 0.5 * float(np.sum((out - y) ** 2)) / n, (out - y) / n


def mlp_forward(x, W1, b1, W2, b2):
    z = x @ W1 + b1
    h = np.maximum(z, 0.0)
    return h @ W2 + b2, h, z


def mlp_backward(dout, x, z, h, W1, W2):
    dW2, db2 = dout.T @ h, dout.sum(axis=0)
    dz = (dout @ W2.T) * (z > 0)
    return dz @ W1.T, dz.T @ x, dz.sum(axis=0), dW2, db2
