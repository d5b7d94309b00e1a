# question: reparameterisation
# A correct answer written with PyTorch (CPU): autograd does every derivative. The test-only
# oracle must get full marks.
# - Pathwise: torch.distributions.Normal's rsample() is mu + sigma * eps with its own noise;
#   the same line with the given eps, then autograd through the sample. mu and sigma are
#   repeated once per sample, so one backward gives every sample's own gradient.
# - Score function: Normal(mu, sigma).log_prob(z) at the detached sample, times f(z), through
#   autograd: the density is differentiated, the sample is not.
# - Gumbel-softmax: torch.softmax of (logits + gumbel) / tau; the backward is PyTorch's own
#   softmax backward from the output (the op autograd calls), then autograd through / tau.
# torch is imported on first use, not at load: loading a submission has 10 s, and importing
# torch on a busy machine can take most of them. f is evaluated by the grader's setup cell's
# numpy helper's math, re-written here on tensors so that autograd can see it.
import importlib

import numpy as np


class _Lazy:
    def __getattr__(self, name):
        return getattr(importlib.import_module("torch"), name)


torch = _Lazy()


def _poly(z, coef):
    """f(z) on a tensor: coef lowest power first (Horner)."""
    out = torch.zeros_like(z)
    for c in reversed([float(c) for c in coef]):
        out = out * z + c
    return out


def _per_sample_params(mu, sigma, s):
    mu_t = torch.full((s,), float(mu), dtype=torch.float64, requires_grad=True)
    sigma_t = torch.full((s,), float(sigma), dtype=torch.float64, requires_grad=True)
    return mu_t, sigma_t


def pathwise_grad(mu, sigma, eps, coef):
    mu_t, sigma_t = _per_sample_params(mu, sigma, eps.shape[0])
    z = mu_t + sigma_t * torch.from_numpy(eps.copy())  # S; rsample() with the given noise
    dmu, dsigma = torch.autograd.grad(_poly(z, coef).sum(), (mu_t, sigma_t))
    return dmu.numpy(), dsigma.numpy()


def score_function_grad(mu, sigma, eps, coef):
    mu_t, sigma_t = _per_sample_params(mu, sigma, eps.shape[0])
    z = (mu_t + sigma_t * torch.from_numpy(eps.copy())).detach()  # S; the sample, held fixed
    log_p = torch.distributions.Normal(mu_t, sigma_t).log_prob(z)  # S
    dmu, dsigma = torch.autograd.grad((_poly(z, coef) * log_p).sum(), (mu_t, sigma_t))
    return dmu.numpy(), dsigma.numpy()


def variance_ratio(mu, sigma, eps, coef):
    path = [torch.from_numpy(a) for a in pathwise_grad(mu, sigma, eps, coef)]
    score = [torch.from_numpy(a) for a in score_function_grad(mu, sigma, eps, coef)]
    return torch.stack([s.var() / p.var() for s, p in zip(score, path)]).numpy()


def gumbel_softmax_forward(logits, gumbel, tau):
    h = (torch.from_numpy(logits) + torch.from_numpy(gumbel)) / tau
    return torch.softmax(h, dim=1).numpy()


def gumbel_softmax_backward(dy, y, tau):
    dh = torch.ops.aten._softmax_backward_data(torch.from_numpy(dy), torch.from_numpy(y), 1,
                                              torch.float64)  # N, K; the gradient at h
    h = torch.zeros(y.shape, dtype=torch.float64, requires_grad=True)  # where h is does not matter
    (dlogits,) = torch.autograd.grad(h / tau, h, dh)  # through h = (logits + gumbel) / tau
    return dlogits.numpy()


def pathwise_grad_log_sigma(mu, log_sigma, eps, coef):
    mu_t, log_sigma_t = _per_sample_params(mu, log_sigma, eps.shape[0])
    z = mu_t + torch.exp(log_sigma_t) * torch.from_numpy(eps.copy())  # S; rsample() of exp(log sigma)
    dmu, dlog_sigma = torch.autograd.grad(_poly(z, coef).sum(), (mu_t, log_sigma_t))
    return dmu.numpy(), dlog_sigma.numpy()
