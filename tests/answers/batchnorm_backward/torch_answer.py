# question: batchnorm_backward
# A correct answer written with PyTorch's own ops: the test-only oracle must get full marks.
import torch
import torch.nn.functional as F


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    """F.batch_norm, on copies of the running buffers (it updates them in place); mean and rstd
    are the statistics it normalised with, from native_batch_norm."""
    x_t, gamma_t, beta_t = (torch.from_numpy(a) for a in (x, gamma, beta))
    rm, rv = torch.tensor(running_mean), torch.tensor(running_var)  # copies
    y = F.batch_norm(x_t, rm, rv, gamma_t, beta_t, training, momentum, eps)  # raises for N = 1
    if training:
        _, mean, rstd = torch.ops.aten.native_batch_norm(x_t, gamma_t, beta_t, None, None, True, 0.0, eps)[:3]
    else:
        mean, rstd = rm.clone(), torch.rsqrt(rv + eps)
    return y.numpy(), mean.numpy(), rstd.numpy(), rm.numpy(), rv.numpy()


def batchnorm_backward(dy, x, gamma, mean, rstd):
    """PyTorch's own training backward (the op autograd calls), fed the forward's cache."""
    dx, dgamma, dbeta = torch.ops.aten.native_batch_norm_backward(
        torch.from_numpy(dy), torch.from_numpy(x), torch.from_numpy(gamma), None, None,
        torch.from_numpy(mean), torch.from_numpy(rstd), True, 0.0, [True, True, True])
    return dx.numpy(), dgamma.numpy(), dbeta.numpy()
