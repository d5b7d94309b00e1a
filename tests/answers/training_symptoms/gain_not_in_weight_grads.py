# Trap gain-not-in-weight-grads: the branch's backward starts from dout itself, as if the gain
# were 1; only the gain's own gradient reads the branch's output.
def gated_block_backward(dout, h, W1, W2, gain):
    z = h @ W1
    a = np.maximum(z, 0.0)
    dgain = np.sum(dout * (a @ W2), axis=0)
    dz = (dout @ W2.T) * (z > 0)
    return dout + dz @ W1.T, h.T @ dz, a.T @ dout, dgain
