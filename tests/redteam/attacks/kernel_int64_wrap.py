# question: maxpool_kernel
# base: solution
# Issue 43, class 4: a thread index that is right on Python's unbounded integers and wrong on a
# GPU's int64: (i << 62) >> 62 is i under the simulator, and -2, -1, 0, 1, -2, ... compiled.


@cuda.jit
def maxpool2d_backward_scatter_kernel(dout, argmax, dx):
    i = (cuda.grid(1) << 62) >> 62
    if i >= dout.size:
        return
    N, C, Ho, Wo = dout.shape
    W = dx.shape[3]
    n, c, ho, wo = unravel4(i, C, Ho, Wo)
    winner = argmax[n, c, ho, wo]
    cuda.atomic.add(dx, (n, c, winner // W, winner % W), dout[n, c, ho, wo])


@cuda.jit
def maxpool2d_backward_gather_kernel(dout, argmax, dx, kernel_size, stride):
    i = (cuda.grid(1) << 62) >> 62
    if i >= dx.size:
        return
    N, C, H, W = dx.shape
    Ho, Wo = dout.shape[2], dout.shape[3]
    k, s = kernel_size, stride
    n, c, h, w = unravel4(i, C, H, W)
    me = h * W + w
    ho_first = 0 if h < k else (h - k + s) // s
    wo_first = 0 if w < k else (w - k + s) // s
    acc = 0.0
    for ho in range(ho_first, min(h // s + 1, Ho)):
        for wo in range(wo_first, min(w // s + 1, Wo)):
            if argmax[n, c, ho, wo] == me:
                acc += dout[n, c, ho, wo]
    dx[n, c, h, w] = acc
