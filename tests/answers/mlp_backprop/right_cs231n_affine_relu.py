# question: mlp_backprop
# expect: full
# Ported from CS231n's layers.py: affine_forward / relu_forward return (out, cache), the
# backward functions take (dout, cache); the contract's functions chain them.
import numpy as np


def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1).dot(w) + b
    return out, (x, w, b)


def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout.dot(w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T.dot(dout)
    db = np.sum(dout, axis=0)
    return dx, dw, db


def relu_forward(x):
    return np.maximum(0, x), x


def relu_backward(dout, cache):
    x = cache
    return dout * (x > 0)


def mse_loss(out, y):
    N = out.shape[0]
    return 0.5 * np.sum((out - y) ** 2) / N, (out - y) / N


def mlp_forward(x, W1, b1, W2, b2):
    z, _ = affine_forward(x, W1, b1)
    h, _ = relu_forward(z)
    out, _ = affine_forward(h, W2, b2)
    return out, h, z


def mlp_backward(dout, x, z, h, W1, W2):
    dh, dW2, db2 = affine_backward(dout, (h, W2, None))
    dz = relu_backward(dh, z)
    dx, dW1, db1 = affine_backward(dz, (x, W1, None))
    return dx, dW1, db1, dW2, db2
