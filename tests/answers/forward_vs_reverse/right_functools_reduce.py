# question: forward_vs_reverse
# expect: full
# Functional: each mode is a fold over the chain; the Jacobians stack the basis vectors' images.
from functools import reduce

import numpy as np


def chain_forward(As, x):
    return reduce(lambda h, A: matvec(A, h), As, x)


def chain_jvp(As, v):
    return reduce(lambda t, A: matvec(A, t), As, v)


def chain_vjp(As, u):
    return reduce(lambda c, A: vecmat(c, A), reversed(As), u)


def jacobian_forward(As):
    return np.column_stack([chain_jvp(As, e) for e in np.eye(As[0].shape[1])])


def jacobian_reverse(As):
    return np.vstack([chain_vjp(As, e) for e in np.eye(As[-1].shape[0])])
