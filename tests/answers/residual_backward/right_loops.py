# question: residual_backward
# expect: full
# A right answer written with explicit loops over rows and units, the way one derives it on
# paper: the block's backward one row at a time.
import math

import numpy as np


def _relu_block(h_row, W1, W2):
    z = [sum(h_row[d] * W1[d, k] for d in range(W1.shape[0])) for k in range(W1.shape[1])]
    a = [max(v, 0.0) for v in z]
    return z, a, [sum(a[k] * W2[k, j] for k in range(W2.shape[0])) for j in range(W2.shape[1])]


def residual_forward(x, weights, skip):
    N, D = x.shape
    hs = np.zeros((len(weights) + 1, N, D))
    hs[0] = x
    for l, (W1, W2) in enumerate(weights):
        for n in range(N):
            _, _, f = _relu_block(hs[l, n], W1, W2)
            for j in range(D):
                hs[l + 1, n, j] = (hs[l, n, j] if skip else 0.0) + f[j]
    return hs


def residual_backward(dout, hs, weights, skip):
    L, (N, D) = len(weights), dout.shape
    dhs = np.zeros(hs.shape)
    dhs[L] = dout
    grads = []
    for l in range(L - 1, -1, -1):
        W1, W2 = weights[l]
        H = W1.shape[1]
        dW1, dW2 = np.zeros(W1.shape), np.zeros(W2.shape)
        for n in range(N):
            z, a, _ = _relu_block(hs[l, n], W1, W2)
            g = dhs[l + 1, n]
            dz = [0.0] * H
            for k in range(H):
                for j in range(D):
                    dW2[k, j] += a[k] * g[j]
                if z[k] > 0:
                    dz[k] = sum(g[j] * W2[k, j] for j in range(D))
            for d in range(D):
                for k in range(H):
                    dW1[d, k] += hs[l, n, d] * dz[k]
                dhs[l, n, d] = (g[d] if skip else 0.0) + sum(dz[k] * W1[d, k] for k in range(H))
        grads.insert(0, (dW1, dW2))
    return dhs, grads


def gradient_norms(dout, x, weights):
    result = []
    for skip in (True, False):
        dhs, _ = residual_backward(dout, residual_forward(x, weights, skip), weights, skip)
        result.append(np.array([math.sqrt(sum(v * v for v in layer.ravel())) for layer in dhs]))
    return tuple(result)


def kaiming_std(shape, mode, negative_slope):
    fan = shape[0] if mode == "fan_in" else shape[1]
    return math.sqrt(2.0 / (1.0 + negative_slope * negative_slope)) / math.sqrt(fan)
