# question: routing_trap
# expect: wrong
# The running max starts at 0 instead of -inf: a window of negative values reports 0 and an
# argmax that points at its top-left corner.
import numpy as np


def maxpool2d_forward(x, kernel_size, stride):
    n, c, h, w = x.shape
    k, s = kernel_size, stride
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    out = np.zeros((n, c, ho, wo))
    argmax = np.zeros((n, c, ho, wo), dtype=np.int64)
    for i in range(ho):
        for j in range(wo):
            argmax[:, :, i, j] = i * s * w + j * s
            for dy in range(k):
                for dx in range(k):
                    v = x[:, :, i * s + dy, j * s + dx]
                    better = v > out[:, :, i, j]
                    out[:, :, i, j] = np.where(better, v, out[:, :, i, j])
                    argmax[:, :, i, j] = np.where(better, (i * s + dy) * w + j * s + dx, argmax[:, :, i, j])
    return out, argmax


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    n, c, h, w = input_shape
    dx = np.zeros((n * c, h * w))
    np.add.at(dx, (np.arange(n * c)[:, None], argmax.reshape(n * c, -1)), dout.reshape(n * c, -1))
    return dx.reshape(n, c, h, w)


def avgpool2d_forward(x, kernel_size, stride):
    k, s = kernel_size, stride
    ho, wo = (x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1
    return sum(x[:, :, dy:dy + s * (ho - 1) + 1:s, dx:dx + s * (wo - 1) + 1:s]
               for dy in range(k) for dx in range(k)) / (k * k)


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    k, s = kernel_size, stride
    ho, wo = dout.shape[2:]
    dx = np.zeros(tuple(input_shape))
    for dy in range(k):
        for dxx in range(k):
            dx[:, :, dy:dy + s * (ho - 1) + 1:s, dxx:dxx + s * (wo - 1) + 1:s] += dout / (k * k)
    return dx
