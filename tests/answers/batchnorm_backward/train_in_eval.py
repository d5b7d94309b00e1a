# Trap train-in-eval: evaluation normalises with the batch's own statistics (the running
# averages are returned unchanged, but never used).
_train_forward = batchnorm_forward


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    if training:
        return _train_forward(x, gamma, beta, running_mean, running_var, True, momentum, eps)
    mean = x.mean(axis=0)  # D
    rstd = 1.0 / np.sqrt(x.var(axis=0) + eps)  # D
    return (x - mean) * rstd * gamma + beta, mean, rstd, running_mean.copy(), running_var.copy()
