# question: routing_trap
# expect: full
# Layer objects with forward/backward methods and a cache, in the style of numpy-ml and nnfs;
# the contract's functions build one layer per call.
import numpy as np


class MaxPool2D:
    def __init__(self, kernel_size, stride):
        self.k, self.s = kernel_size, stride

    def windows(self, shape):
        _, _, h, w = shape
        ho, wo = (h - self.k) // self.s + 1, (w - self.k) // self.s + 1
        return ho, wo

    def forward(self, x):
        n, c, h, w = x.shape
        ho, wo = self.windows(x.shape)
        # im2col: one column of k * k values per window, row-major inside the window
        rows = np.arange(ho)[:, None, None, None] * self.s + np.arange(self.k)[None, None, :, None]
        cols = np.arange(wo)[None, :, None, None] * self.s + np.arange(self.k)[None, None, None, :]
        patches = x[:, :, rows, cols].reshape(n, c, ho, wo, self.k * self.k)
        local = patches.argmax(axis=-1)
        self.out = np.take_along_axis(patches, local[..., None], -1)[..., 0]
        r = np.arange(ho)[:, None] * self.s + local // self.k
        q = np.arange(wo)[None, :] * self.s + local % self.k
        self.argmax = (r * w + q).astype(np.int64)
        return self.out, self.argmax

    def backward(self, dout, argmax, input_shape):
        n, c, h, w = input_shape
        flat = np.zeros(n * c * h * w)
        base = (np.arange(n * c) * h * w).reshape(n, c, 1, 1)
        flat += np.bincount((base + argmax).ravel(), weights=dout.ravel(), minlength=flat.size)
        return flat.reshape(n, c, h, w)


class AvgPool2D(MaxPool2D):
    def forward(self, x):
        ho, wo = self.windows(x.shape)
        total = sum(x[:, :, dy:dy + self.s * (ho - 1) + 1:self.s, dx:dx + self.s * (wo - 1) + 1:self.s]
                    for dy in range(self.k) for dx in range(self.k))
        return total / (self.k * self.k)

    def backward(self, dout, input_shape):
        ho, wo = dout.shape[2:]
        dx = np.zeros(tuple(input_shape))
        for dy in range(self.k):
            for dxx in range(self.k):
                dx[:, :, dy:dy + self.s * (ho - 1) + 1:self.s,
                   dxx:dxx + self.s * (wo - 1) + 1:self.s] += dout / (self.k * self.k)
        return dx


def maxpool2d_forward(x, kernel_size, stride):
    return MaxPool2D(kernel_size, stride).forward(x)


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    return MaxPool2D(kernel_size, stride).backward(dout, argmax, input_shape)


def avgpool2d_forward(x, kernel_size, stride):
    return AvgPool2D(kernel_size, stride).forward(x)


def avgpool2d_backward(dout, input_shape, kernel_size, stride):
    return AvgPool2D(kernel_size, stride).backward(dout, input_shape)
