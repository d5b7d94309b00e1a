# question: reparameterisation
# Trap score-missing-sigma-term: d log N / dsigma written as (z - mu)^2 / sigma^3, without
# the -1/sigma that comes from the normaliser.
import numpy as np


def pathwise_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps  # S
    return f_prime(z, coef), f_prime(z, coef) * eps  # S, S


def score_function_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps  # S
    fz = f(z, coef)  # S
    return fz * (z - mu) / sigma ** 2, fz * (z - mu) ** 2 / sigma ** 3  # no - 1 / sigma


def variance_ratio(mu, sigma, eps, coef):
    path, score = pathwise_grad(mu, sigma, eps, coef), score_function_grad(mu, sigma, eps, coef)
    return np.array([np.var(score[0]) / np.var(path[0]), np.var(score[1]) / np.var(path[1])])


def gumbel_softmax_forward(logits, gumbel, tau):
    h = (logits + gumbel) / tau  # N, K
    e = np.exp(h - h.max(axis=1, keepdims=True))  # N, K
    return e / e.sum(axis=1, keepdims=True)


def gumbel_softmax_backward(dy, y, tau):
    return y * (dy - (dy * y).sum(axis=1, keepdims=True)) / tau  # N, K


def pathwise_grad_log_sigma(mu, log_sigma, eps, coef):
    sigma = np.exp(log_sigma)
    dmu, dsigma = pathwise_grad(mu, sigma, eps, coef)
    return dmu, dsigma * sigma  # the chain rule through sigma = exp(log_sigma)
