# question: layernorm_backward
# Trap stats-as-constants: the backward treats the mean and the variance as constants, so
# dx keeps only the direct term dy * gamma * rstd (dgamma and dbeta are right).
import numpy as np


def layernorm_forward(x, gamma, beta, eps):
    mean = x.mean(axis=1)  # N
    rstd = 1.0 / np.sqrt(x.var(axis=1) + eps)  # N
    y = (x - mean[:, None]) * rstd[:, None] * gamma + beta  # N, D
    return y, mean, rstd


def layernorm_backward(dy, x, gamma, mean, rstd):
    xhat = (x - mean[:, None]) * rstd[:, None]  # N, D
    dx = dy * gamma * rstd[:, None]  # N, D: the paths through the mean and the variance are lost
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)
