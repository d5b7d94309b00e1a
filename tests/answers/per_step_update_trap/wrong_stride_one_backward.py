# question: per_step_update_trap
# expect: trap=stride-ignored
# The backward slides its windows one step at a time, whatever the stride.
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
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    for t in range(dout.shape[2]):
        window = xp[:, :, t:t + k]
        g = dout[:, :, t]
        dw += np.tensordot(g, window, axes=([0], [0]))
        dxp[:, :, t:t + k] += np.tensordot(g, w, axes=([1], [0]))
    return dxp[:, :, padding:padding + length], dw, dout.sum(axis=(0, 2))
