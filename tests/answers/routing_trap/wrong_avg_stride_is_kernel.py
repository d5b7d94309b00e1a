# question: routing_trap
# expect: trap=lost-overlap
# Average-pool backward written as if stride == kernel_size: each window's share is assigned
# to its slice, so where windows overlap the later window replaces the earlier share.
import numpy as np


def maxpool2d_forward(x, kernel_size, stride):
    n, c, h, w = x.shape
    k, s = kernel_size, stride
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    out = np.zeros((n, c, ho, wo))
    argmax = np.zeros((n, c, ho, wo), dtype=np.int64)
    for i in range(ho):
        for j in range(wo):
            win = x[:, :, i * s:i * s + k, j * s:j * s + k].reshape(n, c, k * k)
            local = win.argmax(axis=2)
            out[:, :, i, j] = win.max(axis=2)
            argmax[:, :, i, j] = (i * s + local // k) * w + j * s + local % k
    return out, argmax


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    n, c, h, w = input_shape
    dx = np.zeros((n * c, h * w))
    np.add.at(dx, (np.arange(n * c)[:, None], argmax.reshape(n * c, -1)), dout.reshape(n * c, -1))
    return dx.reshape(n, c, h, w)


def avgpool2d_forward(x, kernel_size, stride):
    k, s = kernel_size, stride
    ho, wo = (x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1
    out = np.zeros(x.shape[:2] + (ho, wo))
    for i in range(ho):
        for j in range(wo):
            out[:, :, i, j] = x[:, :, i * s:i * s + k, j * s:j * s + k].mean(axis=(2, 3))
    return out


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    k, s = kernel_size, stride
    dx = np.zeros(tuple(input_shape))
    for i in range(dout.shape[2]):
        for j in range(dout.shape[3]):
            dx[:, :, i * s:i * s + k, j * s:j * s + k] = dout[:, :, i, j, None, None] / (k * k)
    return dx
