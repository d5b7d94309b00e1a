# Trap batch-not-summed: a loop over the examples reassigns dw and db, so only the last
# example's gradient is returned (dx, one row per example, is right).
_backward = conv1d_backward


def conv1d_backward(dout, x, w, stride, padding):
    dx = np.zeros_like(x)
    for n in range(x.shape[0]):
        dx[n:n + 1], dw, db = _backward(dout[n:n + 1], x[n:n + 1], w, stride, padding)
    return dx, dw, db
