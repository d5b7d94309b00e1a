# Trap kernel-flip: dx written as a sliding window over the stride-dilated, (K-1)-padded dout,
# but with the filter NOT reversed (the gather form needs the reversal).
_backward = conv1d_backward


def conv1d_backward(dout, x, w, stride, padding):
    _, dw, db = _backward(dout, x, w, stride, padding)
    N, C_in, L = x.shape
    K = w.shape[2]
    L_pad = L + 2 * padding
    dilated = np.zeros((N, w.shape[0], L_pad))
    dilated[:, :, :stride * (dout.shape[2] - 1) + 1:stride] = dout
    dilated = np.pad(dilated, ((0, 0), (0, 0), (K - 1, 0)))
    dx_pad = np.zeros((N, C_in, L_pad))
    for j in range(L_pad):
        dx_pad[:, :, j] = np.einsum("nok,ock->nc", dilated[:, :, j:j + K], w)   # w[:, :, ::-1] belongs here
    return dx_pad[:, :, padding:padding + L], dw, db
