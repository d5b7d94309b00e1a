# question: layernorm_backward
# expect: full
# A right answer in the style of llm.c's doc/layernorm/layernorm.py: the backward written
# with means of dnorm and dnorm * norm, x-hat recomputed from the cache.
import numpy as np


def layernorm_forward(x, gamma, beta, eps):
    mean = x.sum(-1, keepdims=True) / x.shape[-1]  # N, 1
    xshift = x - mean  # N, D
    var = (xshift ** 2).sum(-1, keepdims=True) / x.shape[-1]  # N, 1
    rstd = (var + eps) ** -0.5  # N, 1
    norm = xshift * rstd  # N, D
    return norm * gamma + beta, mean.reshape(-1), rstd.reshape(-1)


def layernorm_backward(dy, x, gamma, mean, rstd):
    mean, rstd = mean.reshape(-1, 1), rstd.reshape(-1, 1)  # N, 1
    norm = (x - mean) * rstd  # N, D
    dbeta = dy.sum(0)  # D
    dgamma = (dy * norm).sum(0)  # D
    dnorm = dy * gamma  # N, D
    dx = dnorm - dnorm.mean(-1, keepdims=True) - (dnorm * norm).mean(-1, keepdims=True) * norm
    return dx * rstd, dgamma, dbeta
