# expect: wrong
# The gather sums in float32: right to about 1e-7, but not to the last bit of float64.
import numpy as np
from numba import float32


@cuda.jit
def maxpool2d_backward_gather_kernel(dout, argmax, dx, kernel_size, stride):
    i = cuda.grid(1)
    if i >= dx.size:
        return
    N, C, H, W = dx.shape
    Ho, Wo = dout.shape[2], dout.shape[3]
    k, s = kernel_size, stride
    n, c, h, w = unravel4(i, C, H, W)
    acc = float32(0.0)
    for ho in range(0 if h < k else (h - k + s) // s, min(h // s + 1, Ho)):
        for wo in range(0 if w < k else (w - k + s) // s, min(w // s + 1, Wo)):
            if argmax[n, c, ho, wo] == h * W + w:
                acc = float32(acc + float32(dout[n, c, ho, wo]))
    dx[n, c, h, w] = acc
