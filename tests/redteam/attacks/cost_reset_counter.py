# question: forward_vs_reverse
# base: solution
# Class 2: the matrix-matrix-chain trap (products through the grader's matmul, O(m^3 k)),
# then take_multiply_adds() called from inside the function to wipe the grader's count of it,
# then one cheap matvec per layer so the count reads one pass.
import numpy as np


def _product(As):
    P = As[0]
    for A in As[1:]:
        P = matmul(A, P)
    take_multiply_adds()  # the grader's counter, reset mid-call
    for A in As:
        matvec(A, np.zeros(A.shape[1]))
    return P


def chain_jvp(As, v):
    return _product(As) @ v


def chain_vjp(As, u):
    return _product(As).T @ u


def jacobian_forward(As):
    return _product(As)


def jacobian_reverse(As):
    return _product(As)
