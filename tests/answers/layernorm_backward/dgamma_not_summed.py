# question: layernorm_backward
# Trap dgamma-not-summed: dgamma and dbeta are left unreduced, one row per example (N, D),
# instead of summed over the batch (dx is right).
import numpy as np


def layernorm_forward(x, gamma, beta, eps):
    mean = x.mean(axis=1)  # N
    rstd = 1.0 / np.sqrt(x.var(axis=1) + eps)  # N
    y = (x - mean[:, None]) * rstd[:, None] * gamma + beta  # N, D
    return y, mean, rstd


def layernorm_backward(dy, x, gamma, mean, rstd):
    xhat = (x - mean[:, None]) * rstd[:, None]  # N, D
    g = dy * gamma  # N, D
    dx = rstd[:, None] * (g - g.mean(axis=1, keepdims=True)
                          - xhat * (g * xhat).mean(axis=1, keepdims=True))  # N, D
    return dx, dy * xhat, dy  # (N, D) each: no sum over the batch
