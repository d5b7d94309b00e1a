# expect: wrong
# The forward uses PyTorch's default eps = 1e-5 whatever eps it is given.
def layernorm_forward(x, gamma, beta, eps):
    mean = x.mean(axis=1)
    rstd = 1.0 / np.sqrt(x.var(axis=1) + 1e-5)
    return (x - mean[:, None]) * rstd[:, None] * gamma + beta, mean, rstd
