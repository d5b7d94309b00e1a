# question: maxpool_kernel
# base: solution
# Class 11 (issue 35): a read-modify-write made of an atomic read and one compare-and-swap, with
# no retry when the swap fails: every access is "through cuda.atomic", yet a thread whose swap
# loses to another's drops its gradient (and numba-cuda has no float64 compare-and-swap).


@cuda.jit
def maxpool2d_backward_scatter_kernel(dout, argmax, dx):
    i = cuda.grid(1)
    if i >= dout.size:
        return
    N, C, Ho, Wo = dout.shape
    W = dx.shape[3]
    n, c, ho, wo = unravel4(i, C, Ho, Wo)
    winner = argmax[n, c, ho, wo]
    where = (n, c, winner // W, winner % W)
    old = cuda.atomic.add(dx, where, 0.0)
    cuda.atomic.cas(dx, where, old, old + dout[n, c, ho, wo])
