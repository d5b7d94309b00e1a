# question: layernorm_backward
# A correct answer written with PyTorch's own ops: the test-only oracle must get full marks.
import torch
import torch.nn.functional as F


def layernorm_forward(x, gamma, beta, eps):
    """F.layer_norm's values; the cache (mean, rstd) from the op it calls, native_layer_norm."""
    x_t, gamma_t, beta_t = (torch.from_numpy(a) for a in (x, gamma, beta))
    y = F.layer_norm(x_t, (x.shape[1],), gamma_t, beta_t, eps)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x_t, [x.shape[1]], gamma_t, beta_t, eps)
    return y.numpy(), mean.reshape(-1).numpy(), rstd.reshape(-1).numpy()


def layernorm_backward(dy, x, gamma, mean, rstd):
    """PyTorch's own LayerNorm backward (the op autograd calls), fed the forward's cache."""
    dx, dgamma, dbeta = torch.ops.aten.native_layer_norm_backward(
        torch.from_numpy(dy), torch.from_numpy(x), [x.shape[1]],
        torch.from_numpy(mean).unsqueeze(1), torch.from_numpy(rstd).unsqueeze(1),
        torch.from_numpy(gamma), torch.zeros(x.shape[1], dtype=torch.float64), [True, True, True])
    return dx.numpy(), dgamma.numpy(), dbeta.numpy()
