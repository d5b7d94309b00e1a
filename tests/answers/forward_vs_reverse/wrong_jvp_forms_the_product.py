# question: forward_vs_reverse
# expect: trap=matrix-matrix-chain
# The JVP and VJP first multiply the matrices into J (counted matmuls), then apply it once:
# right values, O(m^3 k) work.
import numpy as np


def chain_forward(As, x):
    h = x
    for A in As:
        h = matvec(A, h)
    return h


def chain_jvp(As, v):
    for A in As:            # A_1 first: the tangent moves with the input
        v = matvec(A, v)
    return v


def chain_vjp(As, u):
    for A in As[::-1]:      # A_k first: the cotangent moves back from the output
        u = vecmat(u, A)
    return u


def jacobian_forward(As):
    m0 = As[0].shape[1]
    J = np.zeros((As[-1].shape[0], m0))
    for j in range(m0):
        e = np.zeros(m0)
        e[j] = 1.0
        J[:, j] = chain_jvp(As, e)
    return J


def jacobian_reverse(As):
    mk = As[-1].shape[0]
    J = np.zeros((mk, As[0].shape[1]))
    for i in range(mk):
        e = np.zeros(mk)
        e[i] = 1.0
        J[i, :] = chain_vjp(As, e)
    return J



def _product(As):
    P = As[0]
    for A in As[1:]:
        P = matmul(A, P)
    return P


def chain_jvp(As, v):
    return matvec(_product(As), v)


def chain_vjp(As, u):
    return vecmat(u, _product(As))
