# expect: unnamed
# says: shared array
# The shared-memory scatter without its syncthreads: threads read the block's shared targets
# before the others wrote them. A race in shared memory, not on dx: its atomic add into dx is
# right, so no trap is named (it was named `race`, told as a plain += on dx).
from numba import cuda, int64, float64

MAX_THREADS = 1024   # the most threads a block may have: the shared arrays fit any launch


@cuda.jit
def maxpool2d_backward_scatter_kernel(dout, argmax, dx):
    """Threads of one block that share a target add their gradients in shared memory first;
    the first of them issues the one atomic add (fewer atomics where windows overlap)."""
    target = cuda.shared.array(MAX_THREADS, int64)
    value = cuda.shared.array(MAX_THREADS, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    C = dout.shape[1]
    Ho = dout.shape[2]
    Wo = dout.shape[3]
    H = dx.shape[2]
    W = dx.shape[3]
    n = 0
    c = 0
    a = 0
    if i < dout.size:
        wo = i % Wo
        ho = (i // Wo) % Ho
        c = (i // (Wo * Ho)) % C
        n = i // (Wo * Ho * C)
        a = argmax[n, c, ho, wo]
        target[t] = (n * C + c) * H * W + a
        value[t] = dout[n, c, ho, wo]
    else:
        target[t] = -1
        value[t] = 0.0
    if i < dout.size:
        me = target[t]
        first = True
        for j in range(t):
            if target[j] == me:
                first = False
        if first:
            total = 0.0
            for j in range(t, cuda.blockDim.x):
                if target[j] == me:
                    total += value[j]
            cuda.atomic.add(dx, (n, c, a // W, a % W), total)
