# Trap running-var-biased: the running variance is updated with the biased batch variance
# (divided by N), the same one that normalises the batch.
def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    if training:
        if x.shape[0] < 2:
            raise ValueError("need more than one example per feature in training")
        mean, var = x.mean(axis=0), x.var(axis=0)  # D each
        new_mean = (1 - momentum) * running_mean + momentum * mean
        new_var = (1 - momentum) * running_var + momentum * var  # biased
    else:
        mean, var = running_mean.copy(), running_var.copy()
        new_mean, new_var = running_mean.copy(), running_var.copy()
    rstd = 1.0 / np.sqrt(var + eps)
    return (x - mean) * rstd * gamma + beta, mean, rstd, new_mean, new_var
