# question: rmsnorm_rope_backward
# expect: full
# A right answer with complex numbers: each pair (x_i, x_{i + D/2}) is x_i + 1j x_{i + D/2},
# RoPE multiplies it by e^{i theta} and its backward by the conjugate, e^{-i theta}.
# RMSNorm in the style of llm.c (keepdims columns, the backward through dnorm).
import numpy as np


def rmsnorm_forward(x, gamma, eps):
    rstd = (np.sum(x * x, axis=-1, keepdims=True) / x.shape[-1] + eps) ** -0.5  # N, 1
    return x * rstd * gamma, rstd.reshape(-1)


def rmsnorm_backward(dy, x, gamma, rstd):
    rstd = rstd.reshape(-1, 1)
    norm = x * rstd
    dnorm = dy * gamma
    dx = (dnorm - norm * (dnorm * norm).sum(-1, keepdims=True) / x.shape[-1]) * rstd
    return dx, (dy * norm).sum(0)


def _turn(x, angle_sign, pos, base):
    n, d = x.shape
    half = d // 2
    theta = np.outer(pos, np.power(float(base), -np.arange(half) / half))
    z = (x[:, :half] + 1j * x[:, half:]) * np.exp(angle_sign * 1j * theta)
    return np.hstack([z.real, z.imag])


def rope_forward(x, pos, base):
    return _turn(x, 1.0, pos, base)


def rope_backward(dy, pos, base):
    return _turn(dy, -1.0, pos, base)
