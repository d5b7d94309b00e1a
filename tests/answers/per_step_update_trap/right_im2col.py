# question: per_step_update_trap
# expect: full
# Vectorised: gather every window once (im2col), then one einsum per product.
import numpy as np


def _columns(xp, k, stride, l_out):
    idx = np.arange(l_out)[:, None] * stride + np.arange(k)[None, :]   # L_out, K
    return xp[:, :, idx]                                               # N, C_in, L_out, K


def conv1d_forward(x, w, b, stride, padding):
    k = w.shape[2]
    l_out = (x.shape[2] + 2 * padding - k) // stride + 1
    cols = _columns(np.pad(x, ((0, 0), (0, 0), (padding, padding))), k, stride, l_out)
    return np.einsum("nclk,ock->nol", cols, w) + b[None, :, None]


def conv1d_backward(dout, x, w, stride, padding):
    n, c_in, length = x.shape
    k, l_out = w.shape[2], dout.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    cols = _columns(xp, k, stride, l_out)
    dw = np.einsum("nol,nclk->ock", dout, cols)
    db = dout.sum(axis=(0, 2))
    dcols = np.einsum("nol,ock->nclk", dout, w)                        # N, C_in, L_out, K
    dxp = np.zeros_like(xp)
    idx = np.arange(l_out)[:, None] * stride + np.arange(k)[None, :]
    np.add.at(dxp, (slice(None), slice(None), idx), dcols)
    return dxp[:, :, padding:padding + length], dw, db
