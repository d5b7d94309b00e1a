# Trap unbiased-in-normalisation: the batch is normalised with its unbiased variance
# (ddof=1), in the forward and in the backward's variance term; the running variance is right.
def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    if training:
        if x.shape[0] < 2:
            raise ValueError("need more than one example per feature in training")
        mean, var = x.mean(axis=0), x.var(axis=0, ddof=1)  # D each: N - 1 everywhere
        new_mean = (1 - momentum) * running_mean + momentum * mean
        new_var = (1 - momentum) * running_var + momentum * var
    else:
        mean, var = running_mean.copy(), running_var.copy()
        new_mean, new_var = running_mean.copy(), running_var.copy()
    rstd = 1.0 / np.sqrt(var + eps)
    return (x - mean) * rstd * gamma + beta, mean, rstd, new_mean, new_var


def batchnorm_backward(dy, x, gamma, mean, rstd):
    n = x.shape[0]
    xhat = (x - mean) * rstd  # N, D
    g = dy * gamma
    dx = rstd * (g - g.mean(axis=0) - xhat * (g * xhat).sum(axis=0) / (n - 1))  # N - 1 again
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)
