# Trap truncation-off-by-one: chunks of k + 1 steps (the carry is cut when t is a multiple of
# k + 1), so each chunk lets the gradient cross one step further back than k.
def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):
    T = x.shape[0]
    dx = np.empty_like(x)
    dW_xh, dW_hh, db = np.zeros_like(W_xh), np.zeros_like(W_hh), np.zeros(W_hh.shape[0])
    carry, dh0 = np.zeros_like(h0), np.zeros_like(h0)
    for t in reversed(range(T)):
        dz = (dhs[t] + carry) * (1.0 - hs[t] ** 2)
        h_prev = hs[t - 1] if t > 0 else h0
        dW_xh += x[t].T @ dz
        dW_hh += h_prev.T @ dz
        db += dz.sum(axis=0)
        dx[t] = dz @ W_xh.T
        carry = dz @ W_hh.T
        if t == 0:
            dh0 = carry
        elif t % (k + 1) == 0:
            carry = np.zeros_like(h0)
    return dx, dh0, dW_xh, dW_hh, db
