# question: routing_trap
# expect: wrong
# The flat index uses the output's width: h * Wo + w instead of h * W + w.
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
            argmax[:, :, i, j] = (i * s + local // k) * wo + j * s + local % k
    return out, argmax


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    n, c, h, w = input_shape
    wo = dout.shape[3]
    dx = np.zeros((n, c, h, w))
    for b in range(n):
        for ch in range(c):
            for i in range(dout.shape[2]):
                for j in range(wo):
                    r, q = divmod(int(argmax[b, ch, i, j]), wo)
                    dx[b, ch, r, q] += dout[b, ch, i, j]
    return dx


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
