# question: forward_vs_reverse
# expect: wrong
# says: same axes in another order
# Reverse mode as forward mode on the transposed chain, but not transposed back: J^T, whose
# (48, 1) shape against (1, 48) is a transpose, not "an axis of length 1 more or fewer".
import numpy as np


def chain_forward(As, x):
    return x if not As else chain_forward(As[1:], matvec(As[0], x))


def chain_jvp(As, v):
    return chain_forward(As, v)


def chain_vjp(As, u):
    return u if not As else chain_vjp(As[:-1], matvec(As[-1].T, u))


def jacobian_forward(As):
    M = np.eye(As[0].shape[1])
    for A in As:
        M = matmul(A, M)          # m_i x m_{i-1} times m_{i-1} x m_0: m_0 JVPs at once
    return M


def jacobian_reverse(As):
    # reverse mode is forward mode on the transposed chain, transposed back
    return jacobian_forward([A.T for A in reversed(As)])
