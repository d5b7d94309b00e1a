# dgamma and dbeta summed over the batch with keepdims=True: shape (1, D) where (D,) is asked.
# They ARE the sum over the batch: a shape message, not dgamma-not-summed (issue 24, class 5).
# expect: unnamed
# says: shape (1,
def layernorm_backward(dy, x, gamma, mean, rstd):
    xhat = (x - mean[:, None]) * rstd[:, None]
    g = dy * gamma
    dx = rstd[:, None] * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True))
    return dx, (dy * xhat).sum(axis=0, keepdims=True), dy.sum(axis=0, keepdims=True)
