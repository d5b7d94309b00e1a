# question: rmsnorm_rope_backward
# expect: trap=rotate-half-sign
# Trap rotate-half-sign: rotate_half(x) = [x2, -x1], the minus on the wrong half, so the forward
# turns every pair by -theta; the backward is the inverse of that (wrong) forward.
import numpy as np


def rmsnorm_forward(x, gamma, eps):
    rstd = 1.0 / np.sqrt((x ** 2).mean(axis=1) + eps)
    return x * rstd[:, None] * gamma, rstd


def rmsnorm_backward(dy, x, gamma, rstd):
    xhat = x * rstd[:, None]
    g = dy * gamma
    return rstd[:, None] * (g - xhat * (g * xhat).mean(axis=1, keepdims=True)), (dy * xhat).sum(axis=0)


def rotate_half(x):
    half = x.shape[1] // 2
    return np.concatenate([x[:, half:], -x[:, :half]], axis=1)


def rope_forward(x, pos, base):
    theta = pos[:, None] * base ** (-np.arange(x.shape[1] // 2) * 2.0 / x.shape[1])
    cos, sin = np.tile(np.cos(theta), 2), np.tile(np.sin(theta), 2)
    return x * cos + rotate_half(x) * sin


def rope_backward(dy, pos, base):
    return rope_forward(dy, -pos, base)
