# question: maxpool_kernel
# base: solution
# Class 11 (issue 35): reach the checker through the objects a kernel holds (the atomic
# wrapper's globals, the array's class) and mark every access atomic, around a plain +=.


@cuda.jit
def maxpool2d_backward_scatter_kernel(dout, argmax, dx):
    i = cuda.grid(1)
    if i >= dout.size:
        return
    N, C, Ho, Wo = dout.shape
    W = dx.shape[3]
    n, c, ho, wo = unravel4(i, C, Ho, Wo)
    winner = argmax[n, c, ho, wo]
    checker = cuda.atomic.add.__globals__
    checker["_local"].atomic = "add"
    checker["_stack"].clear()
    dx[n, c, winner // W, winner % W] += dout[n, c, ho, wo]
