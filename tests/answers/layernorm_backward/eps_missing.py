# question: layernorm_backward
# Trap eps-missing: no eps at all. The forward divides by the standard deviation (0/0 on a
# constant row) and the backward recomputes it from x instead of using the rstd it is given.
import numpy as np


def layernorm_forward(x, gamma, beta, eps):
    mean = x.mean(axis=1)  # N
    std = x.std(axis=1)  # N: no eps
    y = (x - mean[:, None]) / std[:, None] * gamma + beta  # N, D
    return y, mean, 1.0 / std


def layernorm_backward(dy, x, gamma, mean, rstd):
    rstd = 1.0 / x.std(axis=1)  # N: recomputed from x, eps lost
    xhat = (x - mean[:, None]) * rstd[:, None]  # N, D
    g = dy * gamma  # N, D
    dx = rstd[:, None] * (g - g.mean(axis=1, keepdims=True)
                          - xhat * (g * xhat).mean(axis=1, keepdims=True))  # N, D
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)
