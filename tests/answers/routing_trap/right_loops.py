# question: routing_trap
# expect: full
# Plain Python loops over every window, the way most people write it first.
import numpy as np


def maxpool2d_forward(x, kernel_size, stride):
    n, c, h, w = x.shape
    k, s = kernel_size, stride
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    out = np.zeros((n, c, ho, wo))
    argmax = np.zeros((n, c, ho, wo), dtype=np.int64)
    for b in range(n):
        for ch in range(c):
            for i in range(ho):
                for j in range(wo):
                    best, where = -np.inf, -1
                    for dy in range(k):
                        for dx in range(k):
                            r, q = i * s + dy, j * s + dx
                            if x[b, ch, r, q] > best:  # strictly greater: the first max wins
                                best, where = x[b, ch, r, q], r * w + q
                    out[b, ch, i, j] = best
                    argmax[b, ch, i, j] = where
    return out, argmax


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    n, c, h, w = input_shape
    dx = np.zeros((n, c, h * w))
    for b in range(n):
        for ch in range(c):
            for i in range(dout.shape[2]):
                for j in range(dout.shape[3]):
                    dx[b, ch, argmax[b, ch, i, j]] += dout[b, ch, i, j]
    return dx.reshape(n, c, h, w)


def avgpool2d_forward(x, kernel_size, stride):
    n, c, h, w = x.shape
    k, s = kernel_size, stride
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    out = np.zeros((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            out[:, :, i, j] = x[:, :, i * s:i * s + k, j * s:j * s + k].mean(axis=(2, 3))
    return out


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    k, s = kernel_size, stride
    dx = np.zeros(tuple(input_shape))
    for i in range(dout.shape[2]):
        for j in range(dout.shape[3]):
            dx[:, :, i * s:i * s + k, j * s:j * s + k] += dout[:, :, i, j, None, None] / (k * k)
    return dx
