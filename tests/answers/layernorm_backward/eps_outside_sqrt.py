# question: layernorm_backward
# Trap eps-outside-sqrt: rstd = 1 / (sqrt(var) + eps) instead of 1 / sqrt(var + eps). The
# backward is right: it uses the rstd it is given.
import numpy as np


def layernorm_forward(x, gamma, beta, eps):
    mean = x.mean(axis=1)  # N
    rstd = 1.0 / (np.sqrt(x.var(axis=1)) + eps)  # N: eps outside the square root
    y = (x - mean[:, None]) * rstd[:, None] * gamma + beta  # N, D
    return y, mean, rstd


def layernorm_backward(dy, x, gamma, mean, rstd):
    xhat = (x - mean[:, None]) * rstd[:, None]  # N, D
    g = dy * gamma  # N, D
    dx = rstd[:, None] * (g - g.mean(axis=1, keepdims=True)
                          - xhat * (g * xhat).mean(axis=1, keepdims=True))  # N, D
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)
