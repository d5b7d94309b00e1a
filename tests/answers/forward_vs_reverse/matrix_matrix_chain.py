# Trap matrix-matrix-chain: the layers' Jacobians are multiplied together first (J = A_k ... A_1,
# right to left), then applied to the vector. Right values, O(m^3 k) instead of O(m^2 k).
def _chain_product(As):
    J = As[0]  # m_1, m_0
    for A in As[1:]:
        J = matmul(A, J)  # m_i, m_0
    return J


def chain_jvp(As, v):
    return matvec(_chain_product(As), v)


def chain_vjp(As, u):
    return vecmat(u, _chain_product(As))
