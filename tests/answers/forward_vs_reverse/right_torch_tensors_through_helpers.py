# question: forward_vs_reverse
# expect: full
# torch tensors through the counting helpers (they accept tensors); Jacobians stacked with torch.
import numpy as np
import torch


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


def chain_forward(As, x):
    h = _t(x)
    for A in As:
        h = matvec(_t(A), h)
    return h.numpy()


def chain_jvp(As, v):
    return chain_forward(As, v)


def chain_vjp(As, u):
    g = _t(u)
    for A in reversed(As):
        g = vecmat(g, _t(A))
    return g.numpy()


def jacobian_forward(As):
    eye = torch.eye(As[0].shape[1], dtype=torch.float64)
    return torch.stack([_t(chain_jvp(As, e.numpy())) for e in eye], dim=1).numpy()


def jacobian_reverse(As):
    eye = torch.eye(As[-1].shape[0], dtype=torch.float64)
    return torch.stack([_t(chain_vjp(As, e.numpy())) for e in eye], dim=0).numpy()
