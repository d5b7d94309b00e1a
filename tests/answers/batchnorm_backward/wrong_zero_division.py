# expect: trap=batch-of-one
# N / (N - 1) in Python integers: a batch of one raises ZeroDivisionError by accident, not
# the ValueError that says why.
def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    n = x.shape[0]
    if training:
        mean, var = x.mean(axis=0), x.var(axis=0)
        new_mean = (1 - momentum) * running_mean + momentum * mean
        new_var = (1 - momentum) * running_var + momentum * var * (n / (n - 1))
    else:
        mean, var = running_mean.copy(), running_var.copy()
        new_mean, new_var = running_mean.copy(), running_var.copy()
    rstd = 1.0 / np.sqrt(var + eps)
    return (x - mean) * rstd * gamma + beta, mean, rstd, new_mean, new_var
