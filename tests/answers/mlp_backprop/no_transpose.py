# Trap no-transpose: the signal goes back through W instead of W.T (runs only with square layers).
def mlp_backward(dout, x, z, h, W1, W2):
    dW2 = h.T @ dout
    db2 = dout.sum(axis=0)
    dh = dout @ W2
    dz = dh * (z > 0)
    dW1 = x.T @ dz
    db1 = dz.sum(axis=0)
    dx = dz @ W1
    return dx, dW1, db1, dW2, db2
