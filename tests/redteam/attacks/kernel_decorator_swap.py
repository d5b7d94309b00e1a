# question: maxpool_kernel
# base: solution
# Class 11 (issue 35): a decorator that swaps the compiled kernel for a host class computing dx
# with numpy; the source still reads like a CUDA kernel (with a plain +=).


class _Host:
    def __getitem__(self, config):
        return self

    def __call__(self, dout, argmax, dx):
        d, a = dout.copy_to_host(), argmax.copy_to_host()
        out = np.zeros(dx.shape)
        N, C, H, W = out.shape
        flat = out.reshape(N, C, H * W)
        for n in range(N):
            for c in range(C):
                np.add.at(flat[n, c], a[n, c].ravel(), d[n, c].ravel())
        dx.copy_to_device(out)


def _swap(kernel):
    return _Host()


@_swap
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
