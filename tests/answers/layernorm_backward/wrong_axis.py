# question: layernorm_backward
# Trap wrong-axis: every reduction runs over axis 0, the batch. The forward computes
# BatchNorm's per-feature statistics, and the backward's two means are taken over the batch
# too (axis=0 broadcasts without keepdims, so nothing raises).
import numpy as np


def layernorm_forward(x, gamma, beta, eps):
    mean = x.mean(axis=0)  # D, not N
    rstd = 1.0 / np.sqrt(x.var(axis=0) + eps)  # D, not N
    y = (x - mean) * rstd * gamma + beta  # N, D
    return y, mean, rstd


def layernorm_backward(dy, x, gamma, mean, rstd):
    xhat = (x - mean[:, None]) * rstd[:, None]  # N, D
    g = dy * gamma  # N, D
    dx = rstd[:, None] * (g - g.mean(axis=0) - xhat * (g * xhat).mean(axis=0))  # means over the batch
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)
