# question: per_step_update_trap
# expect: wrong
# Pads only the start of the input (a causal convolution), so every window is shifted and
# the output has the wrong length whenever padding > 0.
import numpy as np


def conv1d_forward(x, w, b, stride, padding):
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, 0)))
    l_out = (xp.shape[2] - k) // stride + 1
    idx = np.arange(l_out)[:, None] * stride + np.arange(k)[None, :]
    return np.einsum("nclk,ock->nol", xp[:, :, idx], w) + b[None, :, None]


def conv1d_backward(dout, x, w, stride, padding):
    k, l_out = w.shape[2], dout.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, 0)))
    idx = np.arange(l_out)[:, None] * stride + np.arange(k)[None, :]
    dxp = np.zeros_like(xp)
    np.add.at(dxp, (slice(None), slice(None), idx), np.einsum("nol,ock->nclk", dout, w))
    dw = np.einsum("nol,nclk->ock", dout, xp[:, :, idx])
    return dxp[:, :, padding:], dw, dout.sum(axis=(0, 2))
