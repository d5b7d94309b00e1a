# question: rmsnorm_rope_backward
# A correct answer written with PyTorch: F.rms_norm for the forward, autograd for both backwards,
# and Hugging Face Llama's rotate_half / apply_rotary_pos_emb for RoPE.
import torch
import torch.nn.functional as F


def rmsnorm_forward(x, gamma, eps):
    x_t = torch.from_numpy(x)
    y = F.rms_norm(x_t, (x.shape[1],), torch.from_numpy(gamma), eps)
    rstd = torch.rsqrt(x_t.pow(2).mean(-1) + eps)
    return y.numpy(), rstd.numpy()


def rmsnorm_backward(dy, x, gamma, rstd):
    """Autograd through the forward's formula; eps read back from the cache (it is not given)."""
    x_t = torch.tensor(x, requires_grad=True)
    g_t = torch.tensor(gamma, requires_grad=True)
    eps = 1.0 / torch.from_numpy(rstd)[:, None] ** 2 - torch.from_numpy(x).pow(2).mean(-1, keepdim=True)
    y = x_t * torch.rsqrt(x_t.pow(2).mean(-1, keepdim=True) + eps) * g_t
    y.backward(torch.from_numpy(dy))
    return x_t.grad.numpy(), g_t.grad.numpy()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _rope(x, pos, base):
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.from_numpy(pos).to(torch.float64)[:, None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def rope_forward(x, pos, base):
    with torch.no_grad():
        return _rope(torch.from_numpy(x), pos, base).numpy()


def rope_backward(dy, pos, base):
    x = torch.zeros(dy.shape, dtype=torch.float64, requires_grad=True)
    _rope(x, pos, base).backward(torch.from_numpy(dy))
    return x.grad.numpy()
