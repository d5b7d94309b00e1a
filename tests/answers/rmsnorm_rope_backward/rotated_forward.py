# question: rmsnorm_rope_backward
# expect: trap=rotated-forward
# Trap rotated-forward: "the backward of a rotation is the rotation": dy turned by +theta again.
import numpy as np


def rmsnorm_forward(x, gamma, eps):
    rstd = 1.0 / np.sqrt((x ** 2).mean(axis=1) + eps)
    return x * rstd[:, None] * gamma, rstd


def rmsnorm_backward(dy, x, gamma, rstd):
    xhat = x * rstd[:, None]
    g = dy * gamma
    return rstd[:, None] * (g - xhat * (g * xhat).mean(axis=1, keepdims=True)), (dy * xhat).sum(axis=0)


def rope_forward(x, pos, base):
    half = x.shape[1] // 2
    theta = pos[:, None] * base ** (-np.arange(half) * 2.0 / x.shape[1])
    c, s = np.cos(theta), np.sin(theta)
    return np.concatenate([x[:, :half] * c - x[:, half:] * s, x[:, half:] * c + x[:, :half] * s], axis=1)


def rope_backward(dy, pos, base):
    return rope_forward(dy, pos, base)  # the same angle: R(theta) instead of its transpose
