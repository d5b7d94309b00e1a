# question: maxpool_kernel
# base: solution
# Class 11 (issue 35): no kernel in the source at all: the module execs a string that binds
# both kernel names to host code computing dx with numpy.
_TEXT = """
class _Host:
    def __getitem__(self, config):
        return self

    def __call__(self, dout, argmax, dx, *rest):
        d, a = dout.copy_to_host(), argmax.copy_to_host()
        out = np.zeros(dx.shape)
        N, C, H, W = out.shape
        flat = out.reshape(N, C, H * W)
        for n in range(N):
            for c in range(C):
                np.add.at(flat[n, c], a[n, c].ravel(), d[n, c].ravel())
        dx.copy_to_device(out)

maxpool2d_backward_scatter_kernel = _Host()
maxpool2d_backward_gather_kernel = _Host()
"""
del maxpool2d_backward_scatter_kernel, maxpool2d_backward_gather_kernel
exec(_TEXT)
