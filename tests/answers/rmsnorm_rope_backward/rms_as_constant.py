# question: rmsnorm_rope_backward
# expect: trap=rms-as-constant
# Trap rms-as-constant: the backward treats rstd as a constant, dx = dy * gamma * rstd.
import numpy as np


def rmsnorm_forward(x, gamma, eps):
    rstd = 1.0 / np.sqrt((x ** 2).mean(axis=1) + eps)
    return x * rstd[:, None] * gamma, rstd


def rmsnorm_backward(dy, x, gamma, rstd):
    return dy * gamma * rstd[:, None], (dy * x * rstd[:, None]).sum(axis=0)


def rope_forward(x, pos, base):
    half = x.shape[1] // 2
    theta = pos[:, None] * base ** (-np.arange(half) * 2.0 / x.shape[1])
    c, s = np.cos(theta), np.sin(theta)
    return np.concatenate([x[:, :half] * c - x[:, half:] * s, x[:, half:] * c + x[:, :half] * s], axis=1)


def rope_backward(dy, pos, base):
    return rope_forward(dy, -pos, base)
