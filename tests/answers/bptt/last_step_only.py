# Trap last-step-only: the weight gradients are assigned at every step instead of added to,
# so they keep only the last step walked (step 0); dx and dh0 are right.
def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):
    T = x.shape[0]
    dx = np.empty_like(x)
    carry, dh0 = np.zeros_like(h0), np.zeros_like(h0)
    for t in reversed(range(T)):
        dz = (dhs[t] + carry) * (1.0 - hs[t] ** 2)
        h_prev = hs[t - 1] if t > 0 else h0
        dW_xh = x[t].T @ dz  # overwritten every step
        dW_hh = h_prev.T @ dz
        db = dz.sum(axis=0)
        dx[t] = dz @ W_xh.T
        carry = dz @ W_hh.T
        if t == 0:
            dh0 = carry
        elif t % k == 0:
            carry = np.zeros_like(h0)
    return dx, dh0, dW_xh, dW_hh, db
