# Trap last-step-only: a loop over output positions assigns dw and db where it should add,
# so only the last window's contribution survives (dx is accumulated correctly).
def conv1d_backward(dout, x, w, stride, padding):
    N, C_in, L = x.shape
    K = w.shape[2]
    x_pad = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    dx_pad = np.zeros_like(x_pad)
    for t in range(dout.shape[2]):
        window = x_pad[:, :, t * stride:t * stride + K]                  # N, C_in, K
        dw = np.einsum("no,nck->ock", dout[:, :, t], window)              # '=' where '+=' belongs
        db = dout[:, :, t].sum(axis=0)
        dx_pad[:, :, t * stride:t * stride + K] += np.einsum("no,ock->nck", dout[:, :, t], w)
    return dx_pad[:, :, padding:padding + L].copy(), dw, db
