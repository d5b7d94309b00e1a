# Trap relu-mask-wrong: the ReLU's backward gates by the sign of the incoming gradient dh,
# not by the forward's z > 0.
def mlp_backward(dout, x, z, h, W1, W2):
    dW2 = h.T @ dout
    db2 = dout.sum(axis=0)
    dh = dout @ W2.T
    dz = dh * (dh > 0)
    dW1 = x.T @ dz
    db1 = dz.sum(axis=0)
    dx = dz @ W1.T
    return dx, dW1, db1, dW2, db2
