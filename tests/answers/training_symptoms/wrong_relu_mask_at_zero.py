# expect: unnamed
# says: exactly 0
# The gated block's ReLU mask taken as z >= 0: right everywhere but at a pre-activation of 0.
def gated_block_backward(dout, h, W1, W2, gain):
    z = h @ W1
    a = np.maximum(z, 0.0)
    branch = dout * gain
    dz = (branch @ W2.T) * (z >= 0)
    return dout + dz @ W1.T, h.T @ dz, a.T @ branch, np.sum(dout * (a @ W2), axis=0)
