# question: forward_vs_reverse
# A correct answer written with PyTorch, complete on its own: it defines no helpers, so it
# relies on the grader's copies of matvec, vecmat and matmul (they run after this code and
# work on torch tensors too). The products must go through them to be counted, which is why
# torch.func.jvp / vjp / jacfwd / jacrev (the same maths, uncounted) are not used here; the
# question's test compares the solution with them instead.
import numpy as np
import torch


def _tensors(As):
    return [torch.from_numpy(np.asarray(A)) for A in As]


def chain_forward(As, x):
    h = torch.from_numpy(x)
    for A in _tensors(As):
        h = matvec(A, h)
    return h.numpy()


def chain_jvp(As, v):
    tangent = torch.from_numpy(v)
    for A in _tensors(As):
        tangent = matvec(A, tangent)
    return tangent.numpy()


def chain_vjp(As, u):
    cotangent = torch.from_numpy(u)
    for A in reversed(_tensors(As)):
        cotangent = vecmat(cotangent, A)
    return cotangent.numpy()


def jacobian_forward(As):
    eye = torch.eye(As[0].shape[1], dtype=torch.float64)
    return torch.stack([torch.from_numpy(chain_jvp(As, e.numpy())) for e in eye], dim=1).numpy()


def jacobian_reverse(As):
    eye = torch.eye(As[-1].shape[0], dtype=torch.float64)
    return torch.stack([torch.from_numpy(chain_vjp(As, e.numpy())) for e in eye], dim=0).numpy()
