# Trap bias-not-summed: the bias gradients are means over the batch, not sums.
def mlp_backward(dout, x, z, h, W1, W2):
    dW2 = h.T @ dout
    db2 = dout.mean(axis=0)
    dz = (dout @ W2.T) * (z > 0)
    dW1 = x.T @ dz
    db1 = dz.mean(axis=0)
    dx = dz @ W1.T
    return dx, dW1, db1, dW2, db2
