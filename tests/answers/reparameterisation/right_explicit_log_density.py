# question: reparameterisation
# expect: full
# A right answer the long way: the score written from log N's derivatives in z and mu
# ((z - mu) / sigma^2 and (z - mu)^2 / sigma^3 - 1 / sigma), the pathwise dsigma as
# f'(z) * (z - mu) / sigma, f' by differentiating the power series by hand, variances with
# ddof = 1 (the ratio does not care), the softmax through logsumexp.
import numpy as np


def _f_prime(z, coef):
    return sum(k * c * z ** (k - 1) for k, c in enumerate(coef) if k) + 0.0 * z


def pathwise_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps
    return _f_prime(z, coef), _f_prime(z, coef) * (z - mu) / sigma


def score_function_grad(mu, sigma, eps, coef):
    z = mu + sigma * eps
    fz = sum(c * z ** k for k, c in enumerate(coef)) + 0.0 * z
    return fz * (z - mu) / sigma ** 2, fz * ((z - mu) ** 2 / sigma ** 3 - 1.0 / sigma)


def variance_ratio(mu, sigma, eps, coef):
    (pm, ps), (sm, ss) = pathwise_grad(mu, sigma, eps, coef), score_function_grad(mu, sigma, eps, coef)
    return np.array([sm.var(ddof=1) / pm.var(ddof=1), ss.var(ddof=1) / ps.var(ddof=1)])


def gumbel_softmax_forward(logits, gumbel, tau):
    h = (logits + gumbel) / tau
    m = h.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(h - m).sum(axis=-1, keepdims=True))
    return np.exp(h - lse)


def gumbel_softmax_backward(dy, y, tau):
    n, k = y.shape
    out = np.empty_like(y)
    for i in range(n):  # the full K x K Jacobian of each row, transposed, times dy
        jac = (np.diag(y[i]) - np.outer(y[i], y[i])) / tau
        out[i] = jac.T @ dy[i]
    return out


def pathwise_grad_log_sigma(mu, log_sigma, eps, coef):
    # through the log: d/dlog_sigma = sigma * d/dsigma, and (z - mu) = sigma * eps
    sigma = np.exp(log_sigma)
    z = mu + sigma * eps
    return _f_prime(z, coef), _f_prime(z, coef) * (z - mu)
