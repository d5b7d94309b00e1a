# question: layernorm_backward
# expect: full
# A right answer the long way: each row's full D x D Jacobian of x-hat, built explicitly
# (rstd / D * (D I - 1 1^T - x-hat x-hat^T)) and applied to the row's gradient; np.var and
# keepdims throughout.
import numpy as np


def layernorm_forward(x, gamma, beta, eps):
    mean = np.mean(x, axis=-1, keepdims=True)  # N, 1
    rstd = 1.0 / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps)  # N, 1
    y = gamma * (x - mean) * rstd + beta  # N, D
    return y, mean[:, 0], rstd[:, 0]


def layernorm_backward(dy, x, gamma, mean, rstd):
    n, d = x.shape
    xhat = (x - mean[:, None]) * rstd[:, None]  # N, D
    dx = np.empty_like(x)
    for i in range(n):
        jac = rstd[i] / d * (d * np.eye(d) - np.ones((d, d)) - np.outer(xhat[i], xhat[i]))  # D, D
        dx[i] = jac.T @ (dy[i] * gamma)
    return dx, np.einsum("nd,nd->d", dy, xhat), np.einsum("nd->d", dy)
