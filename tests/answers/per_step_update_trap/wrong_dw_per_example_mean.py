# question: per_step_update_trap
# expect: trap=batch-not-summed
# dw and db are averaged over the batch (the 1 / N is already inside dout).
import numpy as np


def conv1d_forward(x, w, b, stride, padding):
    n, c_in, length = x.shape
    c_out, _, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    l_out = (length + 2 * padding - k) // stride + 1
    out = np.zeros((n, c_out, l_out))
    for t in range(l_out):
        window = xp[:, :, t * stride:t * stride + k]             # N, C_in, K
        out[:, :, t] = np.tensordot(window, w, axes=([1, 2], [1, 2])) + b
    return out


def conv1d_backward(dout, x, w, stride, padding):
    n, c_in, length = x.shape
    k, l_out = w.shape[2], dout.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    idx = np.arange(l_out)[:, None] * stride + np.arange(k)[None, :]
    cols = xp[:, :, idx]                                    # N, C_in, L_out, K
    dw = np.einsum("nol,nclk->ock", dout, cols) / n
    db = dout.sum(axis=2).mean(axis=0)
    dxp = np.zeros_like(xp)
    np.add.at(dxp, (slice(None), slice(None), idx), np.einsum("nol,ock->nclk", dout, w))
    return dxp[:, :, padding:padding + length], dw, db
