# question: forward_vs_reverse
# expect: full
# The VJP as matvec(A.T, u) (the same m n multiply-adds as vecmat(u, A)), the Jacobians as an
# identity pushed through with matmul, and reverse mode as forward mode on the transposed chain,
# transposed back: every product goes through the helpers, so every count is right.
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
    return jacobian_forward([A.T for A in reversed(As)]).T
