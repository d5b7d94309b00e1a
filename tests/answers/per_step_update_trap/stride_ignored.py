# Trap stride-ignored: the backward places window t at t instead of t * stride.
def conv1d_backward(dout, x, w, stride, padding):
    N, C_in, L = x.shape
    K = w.shape[2]
    x_pad = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    dx_pad = np.zeros_like(x_pad)
    dw = np.zeros_like(w)
    for t in range(dout.shape[2]):
        window = x_pad[:, :, t:t + K]                                     # stride forgotten
        dw += np.einsum("no,nck->ock", dout[:, :, t], window)
        dx_pad[:, :, t:t + K] += np.einsum("no,ock->nck", dout[:, :, t], w)
    return dx_pad[:, :, padding:padding + L].copy(), dw, dout.sum(axis=(0, 2))
