# question: routing_trap
# expect: full
# Closure factory + bincount scatter; helpers defined below their callers.
import itertools
import numpy as np


def maxpool2d_forward(x, kernel_size, stride):
    return _pool(kernel_size, stride)(x, "max")


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    N, C, H, W = input_shape
    plane = (np.arange(N * C) * (H * W)).reshape(N, C, 1, 1)
    dx = np.bincount((argmax + plane).ravel(), weights=dout.ravel(), minlength=N * C * H * W)
    return dx.reshape(input_shape)


def avgpool2d_forward(x, kernel_size, stride):
    return _pool(kernel_size, stride)(x, "avg")


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    N, C, H, W = input_shape
    k, s = kernel_size, stride
    Ho, Wo = dout.shape[2:]
    # pooling matrices: out = Ph @ x @ Pw.T  ->  dx = Ph.T @ dout @ Pw
    Ph, Pw = _band(Ho, H, k, s), _band(Wo, W, k, s)
    return np.einsum("ih,ncij,jw->nchw", Ph, dout, Pw) / (k * k)


def _pool(k, s):
    def run(x, kind):
        N, C, H, W = x.shape
        Ho, Wo = (H - k) // s + 1, (W - k) // s + 1
        out = np.empty((N, C, Ho, Wo))
        idx = np.empty((N, C, Ho, Wo), dtype=np.int64)
        for i, j in itertools.product(range(Ho), range(Wo)):
            patch = x[:, :, i * s:i * s + k, j * s:j * s + k]
            if kind == "avg":
                out[:, :, i, j] = patch.sum(axis=(2, 3)) / (k * k)
                continue
            flat = patch.reshape(N, C, -1)
            a = np.argmax(flat, axis=2)
            out[:, :, i, j] = np.max(flat, axis=2)
            idx[:, :, i, j] = (i * s + a // k) * W + (j * s + a % k)
        return (out, idx) if kind == "max" else out
    return run


def _band(n_out, n_in, k, s):
    P = np.zeros((n_out, n_in))
    for i in range(n_out):
        P[i, i * s:i * s + k] = 1.0
    return P
