# question: forward_vs_reverse
# base: solution
# Class 2 baseline: the matrix-matrix-chain trap, honestly (what the reset attack must not beat).
import numpy as np


def _product(As):
    P = As[0]
    for A in As[1:]:
        P = matmul(A, P)
    return P


def chain_jvp(As, v):
    return _product(As) @ v


def chain_vjp(As, u):
    return _product(As).T @ u


def jacobian_forward(As):
    return _product(As)


def jacobian_reverse(As):
    return _product(As)
