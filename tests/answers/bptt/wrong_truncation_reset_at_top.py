# expect: trap=truncation-off-by-one
# The carry is reset at the top of the loop when t is a multiple of k, which cuts it between
# steps t + 1 and t: every boundary one step late, and even full BPTT (k = T) cuts at t = 0.
def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):
    T = x.shape[0]
    dx = np.empty_like(x)
    dW_xh, dW_hh, db = np.zeros_like(W_xh), np.zeros_like(W_hh), np.zeros(W_hh.shape[0])
    carry = np.zeros_like(h0)
    for t in reversed(range(T)):
        if t % k == 0 and t + 1 < T:
            carry = np.zeros_like(h0)
        dz = (dhs[t] + carry) * (1.0 - hs[t] ** 2)
        h_prev = hs[t - 1] if t > 0 else h0
        dW_xh += x[t].T @ dz
        dW_hh += h_prev.T @ dz
        db += dz.sum(axis=0)
        dx[t] = dz @ W_xh.T
        carry = dz @ W_hh.T
    return dx, carry, dW_xh, dW_hh, db
