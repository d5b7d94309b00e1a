# question: maxpool_kernel
# base: solution
# Class 11 (issue 35): no two threads ever touch one element, so no race to log: thread 0 does
# every window's plain += alone, the others return. A real CUDA kernel, but not the one-thread-
# per-output scatter the question asks for (honest plain += scatter: 6/12).


@cuda.jit
def maxpool2d_backward_scatter_kernel(dout, argmax, dx):
    if cuda.grid(1) != 0:
        return
    N, C, Ho, Wo = dout.shape
    W = dx.shape[3]
    for i in range(dout.size):
        n, c, ho, wo = unravel4(i, C, Ho, Wo)
        winner = argmax[n, c, ho, wo]
        dx[n, c, winner // W, winner % W] += dout[n, c, ho, wo]
