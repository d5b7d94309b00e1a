# Trap wrong-order, in the JVP: the tangent meets A_k first instead of A_1.
def chain_jvp(As, v):
    for A in reversed(As):
        v = matvec(A, v)
    return v
