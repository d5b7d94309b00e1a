# expect: trap=wrong-axis
# LayerNorm's statistics in the training forward: one mean and variance per example, over
# its features (keepdims, so nothing raises); the running averages get per-example values.
def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    if not training:
        rstd = 1.0 / np.sqrt(running_var + eps)
        return ((x - running_mean) * rstd * gamma + beta, running_mean.copy(), rstd,
                running_mean.copy(), running_var.copy())
    mean = x.mean(axis=1, keepdims=True)  # N, 1
    var = x.var(axis=1, keepdims=True)  # N, 1
    rstd = 1.0 / np.sqrt(var + eps)
    y = (x - mean) * rstd * gamma + beta
    d = x.shape[1]
    new_mean = (1 - momentum) * running_mean + momentum * mean.mean()
    new_var = (1 - momentum) * running_var + momentum * var.mean() * d / max(d - 1, 1)
    return y, mean[:, 0], rstd[:, 0], new_mean, new_var
