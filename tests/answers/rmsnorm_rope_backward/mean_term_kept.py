# question: rmsnorm_rope_backward
# expect: trap=mean-term-kept
# Trap mean-term-kept: RMSNorm's backward copied from LayerNorm's, the - mean(g) term kept
# (the forward and RoPE are right).
import numpy as np


def rmsnorm_forward(x, gamma, eps):
    rstd = 1.0 / np.sqrt((x ** 2).mean(axis=1) + eps)
    return x * rstd[:, None] * gamma, rstd


def rmsnorm_backward(dy, x, gamma, rstd):
    xhat = x * rstd[:, None]
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
