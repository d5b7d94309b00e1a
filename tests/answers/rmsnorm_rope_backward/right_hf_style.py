# question: rmsnorm_rope_backward
# expect: full
# A right answer in the style of Hugging Face's Llama: a cos/sin table of width D (each angle
# twice), rotate_half, and the backward written out as dy * cos - rotate_half(dy) * sin.
import numpy as np


def rmsnorm_forward(x, gamma, eps):
    variance = np.mean(np.square(x), axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(variance + eps)
    return gamma * (x * rstd), rstd[:, 0]


def rmsnorm_backward(dy, x, gamma, rstd):
    r = rstd[:, np.newaxis]
    dxhat = dy * gamma
    dx = r * dxhat - r ** 3 * x * np.mean(dxhat * x, axis=-1, keepdims=True)
    return dx, np.einsum("nd,nd,n->d", dy, x, rstd)


def rotate_half(x):
    x1, x2 = np.split(x, 2, axis=-1)
    return np.concatenate((-x2, x1), axis=-1)


def cos_sin(pos, d, base):
    inv_freq = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    emb = np.concatenate([np.outer(pos, inv_freq)] * 2, axis=-1)
    return np.cos(emb), np.sin(emb)


def rope_forward(x, pos, base):
    cos, sin = cos_sin(pos, x.shape[-1], base)
    return x * cos + rotate_half(x) * sin


def rope_backward(dy, pos, base):
    cos, sin = cos_sin(pos, dy.shape[-1], base)
    return dy * cos - rotate_half(dy) * sin
