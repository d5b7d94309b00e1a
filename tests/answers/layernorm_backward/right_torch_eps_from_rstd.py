# question: layernorm_backward
# expect: full
# torch autograd; the eps the backward does not get is read back from the rstd it does get.
import numpy as np
import torch
import torch.nn.functional as F


def layernorm_forward(x, gamma, beta, eps):
    xt = torch.from_numpy(x)
    y = F.layer_norm(xt, (x.shape[1],), torch.from_numpy(gamma), torch.from_numpy(beta), eps)
    var = xt.var(dim=1, unbiased=False)
    return y.numpy(), xt.mean(1).numpy(), torch.rsqrt(var + eps).numpy()


def layernorm_backward(dy, x, gamma, mean, rstd):
    xt = torch.tensor(x, requires_grad=True)
    g = torch.tensor(gamma, requires_grad=True)
    b = torch.zeros_like(g, requires_grad=True)
    mu = xt.mean(1, keepdim=True)
    var = ((xt - mu) ** 2).mean(1, keepdim=True)
    eps_row = (torch.from_numpy(rstd) ** -2)[:, None] - var.detach()   # what the forward added
    y = (xt - mu) * torch.rsqrt(var + eps_row) * g + b
    y.backward(torch.from_numpy(dy))
    return xt.grad.numpy(), g.grad.numpy(), b.grad.numpy()
