# question: batchnorm_backward
# expect: full
# A right answer in the style of CS231n's assignment 2 (batchnorm_backward_alt): keepdims
# statistics, and dx from the parameter gradients in one line, N dy - dbeta - x-hat dgamma.
import numpy as np


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    if not training:
        mu, var = running_mean[None, :], running_var[None, :]
        out = gamma * (x - mu) / np.sqrt(var + eps) + beta
        return out, running_mean.copy(), 1 / np.sqrt(running_var + eps), running_mean.copy(), running_var.copy()
    N = x.shape[0]
    if N <= 1:
        raise ValueError("batch of one")
    mu = np.mean(x, axis=0, keepdims=True)
    var = np.var(x, axis=0, keepdims=True)
    std = np.sqrt(var + eps)
    out = gamma * (x - mu) / std + beta
    new_mean = momentum * mu[0] + (1 - momentum) * running_mean
    new_var = momentum * np.var(x, axis=0, ddof=1) + (1 - momentum) * running_var
    return out, mu[0], 1 / std[0], new_mean, new_var


def batchnorm_backward(dy, x, gamma, mean, rstd):
    N = dy.shape[0]
    x_hat = (x - mean) * rstd
    dbeta = np.sum(dy, axis=0)
    dgamma = np.sum(dy * x_hat, axis=0)
    dx = gamma * rstd / N * (N * dy - dbeta - x_hat * dgamma)
    return dx, dgamma, dbeta
