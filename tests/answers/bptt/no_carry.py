# Trap no-carry: each step backpropagates only its own output's gradient; nothing flows back
# from step t + 1 (and so nothing reaches h0 but step 0's own share).
def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):
    T = x.shape[0]
    dx = np.empty_like(x)
    dW_xh, dW_hh, db = np.zeros_like(W_xh), np.zeros_like(W_hh), np.zeros(W_hh.shape[0])
    dh0 = np.zeros_like(h0)
    for t in reversed(range(T)):
        dz = dhs[t] * (1.0 - hs[t] ** 2)  # the carry from step t + 1 is missing
        h_prev = hs[t - 1] if t > 0 else h0
        dW_xh += x[t].T @ dz
        dW_hh += h_prev.T @ dz
        db += dz.sum(axis=0)
        dx[t] = dz @ W_xh.T
        if t == 0:
            dh0 = dz @ W_hh.T
    return dx, dh0, dW_xh, dW_hh, db
