# Trap activation-not-saved: dW2 is built from the pre-activation z instead of h = relu(z).
def mlp_backward(dout, x, z, h, W1, W2):
    dW2 = z.T @ dout
    db2 = dout.sum(axis=0)
    dz = (dout @ W2.T) * (z > 0)
    dW1 = x.T @ dz
    db1 = dz.sum(axis=0)
    dx = dz @ W1.T
    return dx, dW1, db1, dW2, db2
