# Trap no-transpose: the VJP goes back from A_k to A_1 but multiplies by A_i, not A_i^T.
def chain_vjp(As, u):
    for A in reversed(As):
        u = matvec(A, u)
    return u
