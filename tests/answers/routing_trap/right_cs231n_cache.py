# question: routing_trap
# expect: full
# Ported from CS231n's layers.py: the course's *_naive functions take a pool_param dict and
# return (out, cache); the contract's functions are thin adapters around them.
import numpy as np


def max_pool_forward_naive(x, pool_param):
    N, C, H, W = x.shape
    ph, pw, stride = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    Hout, Wout = 1 + (H - ph) // stride, 1 + (W - pw) // stride
    out = np.zeros((N, C, Hout, Wout))
    idx = np.zeros((N, C, Hout, Wout), dtype=np.int64)
    for i in range(Hout):
        for j in range(Wout):
            window = x[:, :, i * stride:i * stride + ph, j * stride:j * stride + pw].reshape(N, C, -1)
            local = np.argmax(window, axis=2)                       # first max, row-major
            out[:, :, i, j] = np.max(window, axis=2)
            idx[:, :, i, j] = (i * stride + local // pw) * W + (j * stride + local % pw)
    cache = (x.shape, pool_param, idx)
    return out, cache


def max_pool_backward_naive(dout, cache):
    shape, pool_param, idx = cache
    N, C, H, W = shape
    dx = np.zeros((N, C, H * W))
    for n in range(N):
        for c in range(C):
            np.add.at(dx[n, c], idx[n, c].ravel(), dout[n, c].ravel())
    return dx.reshape(shape)


def maxpool2d_forward(x, kernel_size, stride):
    out, (_, _, idx) = max_pool_forward_naive(
        x, {"pool_height": kernel_size, "pool_width": kernel_size, "stride": stride})
    return out, idx


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    pool_param = {"pool_height": kernel_size, "pool_width": kernel_size, "stride": stride}
    return max_pool_backward_naive(dout, (tuple(input_shape), pool_param, argmax))


def avgpool2d_forward(x, kernel_size, stride):
    N, C, H, W = x.shape
    k, s = kernel_size, stride
    Hout, Wout = 1 + (H - k) // s, 1 + (W - k) // s
    cols = np.stack([x[:, :, dy:dy + s * (Hout - 1) + 1:s, dx:dx + s * (Wout - 1) + 1:s]
                     for dy in range(k) for dx in range(k)])
    return cols.mean(axis=0)


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    k, s = kernel_size, stride
    _, _, Hout, Wout = dout.shape
    dx = np.zeros(tuple(input_shape))
    for dy in range(k):
        for dxx in range(k):
            dx[:, :, dy:dy + s * (Hout - 1) + 1:s, dxx:dxx + s * (Wout - 1) + 1:s] += dout / k ** 2
    return dx
