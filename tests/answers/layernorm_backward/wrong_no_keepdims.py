# expect: trap=wrong-axis
# The backward's row means lose their axis (no keepdims): an (N, D) array minus N numbers
# raises when N != D, and silently subtracts them across the features when N == D.
def layernorm_backward(dy, x, gamma, mean, rstd):
    xhat = (x - mean[:, None]) * rstd[:, None]
    g = dy * gamma
    dx = rstd[:, None] * (g - g.mean(axis=1) - xhat * (g * xhat).mean(axis=1))
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)
