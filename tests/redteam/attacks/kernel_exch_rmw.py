# question: maxpool_kernel
# base: solution
# Class 11 (issue 35): a read-modify-write made of two atomics (an atomic read, then an atomic
# exchange): every access is "through cuda.atomic", yet two threads can both read the old value
# and one gradient is lost, exactly as with a plain += (honest score 6/12).


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
    cuda.atomic.exch(dx, where, old + dout[n, c, ho, wo])
