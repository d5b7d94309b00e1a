# Trap batch-of-one: no guard for N = 1 in training. numpy divides the unbiased variance by
# N - 1 = 0 with a warning: every output is beta and the running variance is NaN.
def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    n = x.shape[0]
    if training:
        mean, var = x.mean(axis=0), x.var(axis=0)  # D each
        new_mean = (1 - momentum) * running_mean + momentum * mean
        new_var = (1 - momentum) * running_var + momentum * var * n / (n - 1)
    else:
        mean, var = running_mean.copy(), running_var.copy()
        new_mean, new_var = running_mean.copy(), running_var.copy()
    rstd = 1.0 / np.sqrt(var + eps)
    return (x - mean) * rstd * gamma + beta, mean, rstd, new_mean, new_var
