# question: layernorm_backward
# expect: full
# The staged graph (cs231n-style): each forward step's backward, in reverse order.
import numpy as np


def layernorm_forward(x, gamma, beta, eps):
    D = x.shape[1]
    mu = np.sum(x, axis=1) / D
    xc = x - mu[:, None]
    var = np.sum(xc * xc, axis=1) / D
    rstd = (var + eps) ** -0.5
    return xc * rstd[:, None] * gamma + beta, mu, rstd


def layernorm_backward(dy, x, gamma, mean, rstd):
    D = x.shape[1]
    xc = x - mean[:, None]                                  # N, D
    xhat = xc * rstd[:, None]
    dbeta = dy.sum(axis=0)
    dgamma = (dy * xhat).sum(axis=0)
    dxhat = dy * gamma
    drstd = (dxhat * xc).sum(axis=1)                        # N
    dvar = drstd * (-0.5) * rstd ** 3                       # d rstd / d var = -1/2 (var+eps)^-3/2
    dxc = dxhat * rstd[:, None] + dvar[:, None] * 2.0 * xc / D
    dmu = -dxc.sum(axis=1)
    dx = dxc + dmu[:, None] / D
    return dx, dgamma, dbeta
