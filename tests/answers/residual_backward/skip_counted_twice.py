# Trap skip-counted-twice: the block's backward adds the gradient from above for the skip, and
# the loop adds it again where the block is called.
def _block_backward(above, h, W1, W2):
    z = h @ W1
    dz = (above @ W2.T) * (z > 0)
    return above + dz @ W1.T, (h.T @ dz, np.maximum(z, 0.0).T @ above)


def residual_backward(dout, hs, weights, skip):
    L = len(weights)
    dhs = np.empty(hs.shape)
    dhs[L] = dout
    grads = [None] * L
    for l in reversed(range(L)):
        if skip:
            dh, grads[l] = _block_backward(dhs[l + 1], hs[l], *weights[l])
            dhs[l] = dh + dhs[l + 1]  # the skip, a second time
        else:
            dh, grads[l] = _block_backward(dhs[l + 1], hs[l], *weights[l])
            dhs[l] = dh - dhs[l + 1]
    return dhs, grads
