# expect: wrong
# The running averages updated in place, as PyTorch's buffers are: the values are right,
# but the caller's arrays change under it.
_right_forward = batchnorm_forward


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    y, mean, rstd, new_mean, new_var = _right_forward(x, gamma, beta, running_mean, running_var,
                                                      training, momentum, eps)
    running_mean[:] = new_mean
    running_var[:] = new_var
    return y, mean, rstd, running_mean, running_var
