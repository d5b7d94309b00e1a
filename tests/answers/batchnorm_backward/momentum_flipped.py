# Trap momentum-flipped: Keras's convention, momentum weighting the old running value.
def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    n = x.shape[0]
    if training:
        if n < 2:
            raise ValueError("need more than one example per feature in training")
        mean, var = x.mean(axis=0), x.var(axis=0)  # D each
        new_mean = momentum * running_mean + (1 - momentum) * mean
        new_var = momentum * running_var + (1 - momentum) * var * n / (n - 1)
    else:
        mean, var = running_mean.copy(), running_var.copy()
        new_mean, new_var = running_mean.copy(), running_var.copy()
    rstd = 1.0 / np.sqrt(var + eps)
    return (x - mean) * rstd * gamma + beta, mean, rstd, new_mean, new_var
