# Trap no-transpose, the other way: each weight gradient is multiplied in the wrong order,
# dW = upstream.T @ input, so it comes out transposed: (D_out, H) instead of (H, D_out).
def mlp_backward(dout, x, z, h, W1, W2):
    dW2 = dout.T @ h
    db2 = dout.sum(axis=0)
    dz = (dout @ W2.T) * (z > 0)
    dW1 = dz.T @ x
    db1 = dz.sum(axis=0)
    dx = dz @ W1.T
    return dx, dW1, db1, dW2, db2
