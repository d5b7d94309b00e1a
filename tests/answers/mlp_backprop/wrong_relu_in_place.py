# question: mlp_backprop
# expect: wrong
# Right values, but the backward zeroes dh in place through a view of the caller's array
# and the forward applies the ReLU in place on a z it then returns: inputs are changed.
import numpy as np


def mse_loss(out, y):
    return 0.5 * float(np.sum((out - y) ** 2)) / len(out), (out - y) / len(out)


def mlp_forward(x, W1, b1, W2, b2):
    z = x @ W1 + b1
    h = z.copy()
    h[h < 0] = 0
    return h @ W2 + b2, h, z


def mlp_backward(dout, x, z, h, W1, W2):
    dW2, db2 = h.T @ dout, dout.sum(axis=0)
    dh = dout @ W2.T
    dh[z <= 0] = 0
    z[z < 0] = 0          # "clean up" the cache: writes into the caller's z
    return dh @ W1.T, x.T @ dh, dh.sum(axis=0), dW2, db2
