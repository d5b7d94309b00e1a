# question: rmsnorm_rope_backward
# expect: trap=mean-term-kept
# LayerNorm without its bias passed off as RMSNorm: the forward centres each row and divides
# by its standard deviation, and the backward is LayerNorm's (mean recomputed from x).
import numpy as np


def rmsnorm_forward(x, gamma, eps):
    xc = x - x.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(x.var(axis=1) + eps)
    return xc * rstd[:, None] * gamma, rstd


def rmsnorm_backward(dy, x, gamma, rstd):
    xhat = (x - x.mean(axis=1, keepdims=True)) * rstd[:, None]
    g = dy * gamma
    dx = rstd[:, None] * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True))
    return dx, (dy * xhat).sum(axis=0)


def rope_forward(x, pos, base):
    half = x.shape[1] // 2
    theta = pos[:, None] * base ** (-np.arange(half) * 2.0 / x.shape[1])
    c, s = np.cos(theta), np.sin(theta)
    return np.concatenate([x[:, :half] * c - x[:, half:] * s, x[:, half:] * c + x[:, :half] * s], axis=1)


def rope_backward(dy, pos, base):
    return rope_forward(dy, -pos, base)
