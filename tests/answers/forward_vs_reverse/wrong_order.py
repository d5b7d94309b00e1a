# Trap wrong-order: the VJP starts at A_1^T instead of A_k^T (the transposes are right,
# the order is the forward pass's). Square chains give wrong values, others a shape error.
def chain_vjp(As, u):
    for A in As:
        u = vecmat(u, A)
    return u
