# question: reparameterisation
# Trap sigma-grad-from-z: dz/dsigma taken as z instead of eps, in both estimators:
# the pathwise dsigma is f'(z) * z, the score function's f(z) * (z**2 - 1) / sigma.
import numpy as np


def pathwise_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps  # S
    return f_prime(z, coef), f_prime(z, coef) * z  # z where eps belongs


def score_function_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps  # S
    fz = f(z, coef)  # S
    return fz * eps / sigma, fz * (z ** 2 - 1.0) / sigma  # z where eps belongs


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
