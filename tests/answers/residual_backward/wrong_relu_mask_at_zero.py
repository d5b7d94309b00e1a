# expect: unnamed
# says: exactly 0
# The ReLU's mask taken as z >= 0: at a pre-activation of exactly 0 the gradient passes.
# No trap of this question: the check on the kink says where it differs.
def residual_backward(dout, hs, weights, skip):
    L = len(weights)
    dhs = np.empty(hs.shape)
    dhs[L] = dout
    grads = [None] * L
    for l in reversed(range(L)):
        W1, W2 = weights[l]
        z = hs[l] @ W1
        dz = (dhs[l + 1] @ W2.T) * (z >= 0)
        grads[l] = (hs[l].T @ dz, np.maximum(z, 0.0).T @ dhs[l + 1])
        dhs[l] = dz @ W1.T + (dhs[l + 1] if skip else 0.0)
    return dhs, grads
