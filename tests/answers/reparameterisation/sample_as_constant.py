# question: reparameterisation
# Trap sample-as-constant: the pathwise estimator treats the sample z as data (as if it
# were z.detach()): nothing flows back to mu or sigma, so both per-sample gradients are 0.
# f and f_prime come from the setup cell, which the grader runs after this file.
import numpy as np


def pathwise_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps  # S; "a random draw has no gradient"
    return np.zeros_like(z), np.zeros_like(z)


def score_function_grad(mu, sigma, eps, coef):
    fz = f(mu + sigma * eps, coef)  # S
    return fz * eps / sigma, fz * (eps ** 2 - 1.0) / sigma  # S, S


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
    z = mu + sigma * eps
    return f_prime(z, coef), f_prime(z, coef) * sigma * eps
