# expect: trap=out-of-bounds
# Neither kernel checks its index: the last block's threads past the end index outside the arrays.


@cuda.jit
def maxpool2d_backward_scatter_kernel(dout, argmax, dx):
    i = cuda.grid(1)
    N, C, Ho, Wo = dout.shape
    W = dx.shape[3]
    n, c, ho, wo = unravel4(i, C, Ho, Wo)
    winner = argmax[n, c, ho, wo]
    cuda.atomic.add(dx, (n, c, winner // W, winner % W), dout[n, c, ho, wo])


@cuda.jit
def maxpool2d_backward_gather_kernel(dout, argmax, dx, kernel_size, stride):
    i = cuda.grid(1)
    N, C, H, W = dx.shape
    Ho, Wo = dout.shape[2], dout.shape[3]
    k, s = kernel_size, stride
    n, c, h, w = unravel4(i, C, H, W)
    acc = dout[n, c, 0, 0] * 0.0
    for ho in range(0 if h < k else (h - k + s) // s, min(h // s + 1, Ho)):
        for wo in range(0 if w < k else (w - k + s) // s, min(w // s + 1, Wo)):
            if argmax[n, c, ho, wo] == h * W + w:
                acc += dout[n, c, ho, wo]
    dx[n, c, h, w] = acc
