# question: rmsnorm_rope_backward
# expect: trap=interleaved-pairs
# Trap interleaved-pairs: GPT-J's (and Meta's original Llama code's) layout, adjacent features
# (2i, 2i + 1) rotated together, where the contract pairs i with i + D/2.
import numpy as np


def rmsnorm_forward(x, gamma, eps):
    rstd = 1.0 / np.sqrt((x ** 2).mean(axis=1) + eps)
    return x * rstd[:, None] * gamma, rstd


def rmsnorm_backward(dy, x, gamma, rstd):
    xhat = x * rstd[:, None]
    g = dy * gamma
    return rstd[:, None] * (g - xhat * (g * xhat).mean(axis=1, keepdims=True)), (dy * xhat).sum(axis=0)


def rope_forward(x, pos, base):
    theta = pos[:, None] * base ** (-np.arange(0, x.shape[1], 2) / x.shape[1])  # N, D/2
    z = (x[:, 0::2] + 1j * x[:, 1::2]) * np.exp(1j * theta)
    y = np.empty_like(x)
    y[:, 0::2], y[:, 1::2] = z.real, z.imag
    return y


def rope_backward(dy, pos, base):
    return rope_forward(dy, -pos, base)
