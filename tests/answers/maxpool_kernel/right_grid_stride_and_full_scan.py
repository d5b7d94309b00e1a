# expect: full
# Right, in another style: both kernels loop grid-stride (any grid covers any size), the
# scatter indexes dx through flat divisions, and the gather scans every window of its plane
# (slower, the same sums in the same row-major order).


@cuda.jit
def maxpool2d_backward_scatter_kernel(dout, argmax, dx):
    Ho, Wo = dout.shape[2], dout.shape[3]
    C, W = dx.shape[1], dx.shape[3]
    for i in range(cuda.grid(1), dout.size, cuda.gridsize(1)):
        plane, rest = i // (Ho * Wo), i % (Ho * Wo)
        n, c = plane // C, plane % C
        ho, wo = rest // Wo, rest % Wo
        where = argmax[n, c, ho, wo]
        cuda.atomic.add(dx, (n, c, where // W, where % W), dout[n, c, ho, wo])


@cuda.jit
def maxpool2d_backward_gather_kernel(dout, argmax, dx, kernel_size, stride):
    C, H, W = dx.shape[1], dx.shape[2], dx.shape[3]
    for i in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        n, c, h, w = i // (C * H * W), (i // (H * W)) % C, (i // W) % H, i % W
        total = 0.0
        for ho in range(dout.shape[2]):
            for wo in range(dout.shape[3]):
                if argmax[n, c, ho, wo] == h * W + w:
                    total += dout[n, c, ho, wo]
        dx[n, c, h, w] = total
