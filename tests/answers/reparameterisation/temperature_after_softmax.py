# question: reparameterisation
# Trap temperature-after-softmax: the softmax of the noisy logits, then divided by tau
# (rows sum to 1 / tau). The backward is right.
import numpy as np


def pathwise_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps  # S
    return f_prime(z, coef), f_prime(z, coef) * eps  # S, S


def score_function_grad(mu, sigma, eps, coef):
    fz = f(mu + sigma * eps, coef)  # S
    return fz * eps / sigma, fz * (eps ** 2 - 1.0) / sigma  # S, S


def variance_ratio(mu, sigma, eps, coef):
    path, score = pathwise_grad(mu, sigma, eps, coef), score_function_grad(mu, sigma, eps, coef)
    return np.array([np.var(score[0]) / np.var(path[0]), np.var(score[1]) / np.var(path[1])])


def gumbel_softmax_forward(logits, gumbel, tau):
    h = logits + gumbel  # N, K
    e = np.exp(h - h.max(axis=1, keepdims=True))  # N, K
    return e / e.sum(axis=1, keepdims=True) / tau  # the temperature after the softmax


def gumbel_softmax_backward(dy, y, tau):
    return y * (dy - (dy * y).sum(axis=1, keepdims=True)) / tau  # N, K


def pathwise_grad_log_sigma(mu, log_sigma, eps, coef):
    sigma = np.exp(log_sigma)
    dmu, dsigma = pathwise_grad(mu, sigma, eps, coef)
    return dmu, dsigma * sigma  # the chain rule through sigma = exp(log_sigma)
