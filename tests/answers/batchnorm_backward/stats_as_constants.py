# Trap stats-as-constants: the training backward treats the batch mean and variance as
# constants, so dx keeps only the direct term dy * gamma * rstd (dgamma and dbeta are right).
def batchnorm_backward(dy, x, gamma, mean, rstd):
    xhat = (x - mean) * rstd  # N, D
    return dy * gamma * rstd, (dy * xhat).sum(axis=0), dy.sum(axis=0)
