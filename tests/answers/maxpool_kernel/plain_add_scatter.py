# expect: trap=race
# The scatter adds with a plain += : where windows overlap two threads read, add and write one
# element of dx. The simulator's schedule may still give the right sum; the race checker's
# log of who reads and writes which element names the race all the same.


@cuda.jit
def maxpool2d_backward_scatter_kernel(dout, argmax, dx):
    i = cuda.grid(1)
    if i >= dout.size:
        return
    N, C, Ho, Wo = dout.shape
    W = dx.shape[3]
    n, c, ho, wo = unravel4(i, C, Ho, Wo)
    winner = argmax[n, c, ho, wo]
    dx[n, c, winner // W, winner % W] += dout[n, c, ho, wo]
