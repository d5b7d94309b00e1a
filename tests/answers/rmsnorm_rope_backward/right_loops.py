# question: rmsnorm_rope_backward
# expect: full
# A right answer with plain loops, as a candidate writes it on a whiteboard: the RMSNorm
# Jacobian applied row by row, each RoPE pair turned by its 2 x 2 matrix and back by its transpose.
import math

import numpy as np


def rmsnorm_forward(x, gamma, eps):
    n, d = x.shape
    y, rstd = np.zeros((n, d)), np.zeros(n)
    for i in range(n):
        rstd[i] = 1.0 / math.sqrt(sum(v * v for v in x[i]) / d + eps)
        for j in range(d):
            y[i, j] = x[i, j] * rstd[i] * gamma[j]
    return y, rstd


def rmsnorm_backward(dy, x, gamma, rstd):
    n, d = x.shape
    dx, dgamma = np.zeros((n, d)), np.zeros(d)
    for i in range(n):
        r = rstd[i]
        xhat = [x[i, j] * r for j in range(d)]
        g = [dy[i, j] * gamma[j] for j in range(d)]
        dot = sum(g[j] * xhat[j] for j in range(d)) / d
        for j in range(d):
            dx[i, j] = r * (g[j] - xhat[j] * dot)
            dgamma[j] += dy[i, j] * xhat[j]
    return dx, dgamma


def _rotate(x, pos, base, sign):
    n, d = x.shape
    half = d // 2
    out = np.zeros((n, d))
    for i in range(n):
        for k in range(half):
            theta = pos[i] * base ** (-2.0 * k / d)
            c, s = math.cos(theta), sign * math.sin(theta)
            a, b = x[i, k], x[i, k + half]
            out[i, k] = c * a - s * b
            out[i, k + half] = s * a + c * b
    return out


def rope_forward(x, pos, base):
    return _rotate(x, pos, base, 1.0)


def rope_backward(dy, pos, base):
    return _rotate(dy, pos, base, -1.0)  # the transpose: the sine changes sign
