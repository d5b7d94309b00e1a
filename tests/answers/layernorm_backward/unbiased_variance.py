# question: layernorm_backward
# Trap unbiased-variance: the variance is divided by D - 1 (ddof=1), in the forward and in
# the backward's variance term.
import numpy as np


def layernorm_forward(x, gamma, beta, eps):
    mean = x.mean(axis=1)  # N
    rstd = 1.0 / np.sqrt(x.var(axis=1, ddof=1) + eps)  # N: divided by D - 1
    y = (x - mean[:, None]) * rstd[:, None] * gamma + beta  # N, D
    return y, mean, rstd


def layernorm_backward(dy, x, gamma, mean, rstd):
    d = x.shape[1]
    xhat = (x - mean[:, None]) * rstd[:, None]  # N, D
    g = dy * gamma  # N, D
    dx = rstd[:, None] * (g - g.mean(axis=1, keepdims=True)
                          - xhat * (g * xhat).sum(axis=1, keepdims=True) / (d - 1))  # D - 1 again
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)
