# question: batchnorm_backward
# expect: full
# A right answer written with loops, one feature at a time, as on a whiteboard: the
# statistics from explicit sums, dx from the per-feature Jacobian's three terms.
import math

import numpy as np


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    n, d = x.shape
    if training and n == 1:
        raise ValueError("Expected more than 1 value per channel when training")
    y = np.empty_like(x)
    mean, rstd = np.empty(d), np.empty(d)
    new_mean, new_var = np.array(running_mean, dtype=float), np.array(running_var, dtype=float)
    for j in range(d):
        if training:
            mu = sum(x[i, j] for i in range(n)) / n
            ss = sum((x[i, j] - mu) ** 2 for i in range(n))
            var = ss / n
            new_mean[j] = (1 - momentum) * running_mean[j] + momentum * mu
            new_var[j] = (1 - momentum) * running_var[j] + momentum * ss / (n - 1)
        else:
            mu, var = running_mean[j], running_var[j]
        mean[j], rstd[j] = mu, 1.0 / math.sqrt(var + eps)
        for i in range(n):
            y[i, j] = gamma[j] * (x[i, j] - mu) * rstd[j] + beta[j]
    return y, mean, rstd, new_mean, new_var


def batchnorm_backward(dy, x, gamma, mean, rstd):
    n, d = x.shape
    dx, dgamma, dbeta = np.zeros_like(x), np.zeros(d), np.zeros(d)
    for j in range(d):
        xhat = [(x[i, j] - mean[j]) * rstd[j] for i in range(n)]
        for i in range(n):
            dbeta[j] += dy[i, j]
            dgamma[j] += dy[i, j] * xhat[i]
        for i in range(n):  # dx_i = sum_m g_m * rstd / N * (N delta_mi - 1 - xhat_m xhat_i)
            dx[i, j] = sum(gamma[j] * dy[m, j] * rstd[j] / n * ((n if m == i else 0) - 1 - xhat[m] * xhat[i])
                           for m in range(n))
    return dx, dgamma, dbeta
