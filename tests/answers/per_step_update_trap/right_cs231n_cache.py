# question: per_step_update_trap
# expect: full
# Ported from CS231n's conv_forward_naive / conv_backward_naive (one spatial axis): the course
# functions take a conv_param dict and pass a cache tuple; the contract's functions adapt.
import numpy as np


def conv_forward_naive(x, w, b, conv_param):
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, L = x.shape
    F, _, K = w.shape
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad)), mode="constant")
    L_out = 1 + (L + 2 * pad - K) // stride
    out = np.zeros((N, F, L_out))
    for n in range(N):
        for f in range(F):
            for t in range(L_out):
                out[n, f, t] = np.sum(x_pad[n, :, t * stride:t * stride + K] * w[f]) + b[f]
    cache = (x, w, b, conv_param)
    return out, cache


def conv_backward_naive(dout, cache):
    x, w, b, conv_param = cache
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, L = x.shape
    F, _, K = w.shape
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad)), mode="constant")
    dx_pad = np.zeros_like(x_pad)
    dw = np.zeros_like(w)
    db = np.zeros_like(b)
    for n in range(N):
        for f in range(F):
            for t in range(dout.shape[2]):
                g = dout[n, f, t]
                db[f] += g
                dw[f] += g * x_pad[n, :, t * stride:t * stride + K]
                dx_pad[n, :, t * stride:t * stride + K] += g * w[f]
    return dx_pad[:, :, pad:pad + L], dw, db


def conv1d_forward(x, w, b, stride, padding):
    return conv_forward_naive(x, w, b, {"stride": stride, "pad": padding})[0]


def conv1d_backward(dout, x, w, stride, padding):
    conv_param = {"stride": stride, "pad": padding}
    return conv_backward_naive(dout, (x, w, np.zeros(w.shape[0]), conv_param))
