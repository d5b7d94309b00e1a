# question: maxpool_kernel
# base: solution
# Class 11 (issue 35): a kernel that is no kernel: an object with __getitem__, launched as
# kernel[blocks, threads](...), whose "launch" computes dx with numpy on the host and copies
# it into the device array. No race to see, no CUDA at all.


class _Launch:
    def __getitem__(self, config):
        return self._host

    @staticmethod
    def _host(dout, argmax, dx, *rest):
        d, a = dout.copy_to_host(), argmax.copy_to_host()
        out = np.zeros(dx.shape)
        N, C, H, W = out.shape
        flat = out.reshape(N, C, H * W)
        for n in range(N):
            for c in range(C):
                np.add.at(flat[n, c], a[n, c].ravel(), d[n, c].ravel())
        dx.copy_to_device(out)

    __call__ = _host


maxpool2d_backward_scatter_kernel = _Launch()
