# expect: trap=lost-overlap
# The gather stops at the first covering window the input won.


@cuda.jit
def maxpool2d_backward_gather_kernel(dout, argmax, dx, kernel_size, stride):
    i = cuda.grid(1)
    if i >= dx.size:
        return
    N, C, H, W = dx.shape
    Ho, Wo = dout.shape[2], dout.shape[3]
    k, s = kernel_size, stride
    n, c, h, w = unravel4(i, C, H, W)
    me = h * W + w
    acc = dout[n, c, 0, 0] * 0.0
    found = False
    for ho in range(0 if h < k else (h - k + s) // s, min(h // s + 1, Ho)):
        for wo in range(0 if w < k else (w - k + s) // s, min(w // s + 1, Wo)):
            if not found and argmax[n, c, ho, wo] == me:
                acc = dout[n, c, ho, wo]
                found = True
    dx[n, c, h, w] = acc
