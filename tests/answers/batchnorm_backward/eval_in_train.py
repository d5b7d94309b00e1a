# Trap eval-in-train: the training flag is ignored and the running statistics always
# normalise, so training neither uses the batch's statistics nor updates the averages.
def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    rstd = 1.0 / np.sqrt(running_var + eps)  # D
    y = (x - running_mean) * rstd * gamma + beta  # N, D
    return y, running_mean.copy(), rstd, running_mean.copy(), running_var.copy()
