# question: forward_vs_reverse
# Class 2, round 2 (forged cost score): every value is computed uncounted with @, then only
# the last product is sent through the counter (so the answer "came out of" a counted
# product), and the count is padded to one pass with products of the chain's own matrices
# on vectors from nowhere. Honest score of this bypass (nothing counted): 6/12.
import numpy as np


def _pad(As, skip_last=True):
    for A in (As[:-1] if skip_last else As):
        matvec(A, np.ones(A.shape[1]))  # a chain matrix, a vector off the chain


def _last_through_counter(As, x):
    for A in As[:-1]:
        x = A @ x  # uncounted
    _pad(As)
    return matvec(As[-1], x)  # the one token product the answer comes out of


def chain_forward(As, x):
    return _last_through_counter(As, x)


def chain_jvp(As, v):
    return _last_through_counter(As, v)


def chain_vjp(As, u):
    for A in reversed(As[1:]):
        u = u @ A
    for A in As[1:]:
        vecmat(np.ones(A.shape[0]), A)
    return vecmat(u, As[0])


def jacobian_forward(As):
    return np.stack([_last_through_counter(As, e) for e in np.eye(As[0].shape[1])], axis=1)


def jacobian_reverse(As):
    return np.stack([chain_vjp(As, e) for e in np.eye(As[-1].shape[0])], axis=0)
