# question: vram_trap
# expect: wrong
# The ReLU mask is taken as z >= 0: at an exact zero the gradient passes, but relu'(0) = 0.
# inputs and packed masks) that are emptied as the backward pass walks through them.
import numpy as np


def relu_forward_packed(z):
    return np.maximum(z, 0.0), np.packbits((z >= 0).ravel())


def relu_backward_packed(da, mask, shape):
    n = int(np.prod(shape))
    return da * np.unpackbits(mask)[:n].reshape(shape)


def mlp_loss_and_grads(params, x, y, segment_size):
    L, N = len(params), x.shape[0]
    saved = {}
    h = x
    for i, (W, b) in enumerate(params):
        if i % segment_size == 0:
            saved[i] = h
        z = h @ W + b
        h = z if i == L - 1 else np.maximum(z, 0.0)
        del z
    diff = h - y
    del h
    loss = 0.5 * float(np.sum(diff * diff)) / N
    dh = diff / N
    del diff
    grads = [None] * L
    for start in sorted(saved, reverse=True):
        stop = min(start + segment_size, L)
        inputs, masks = [saved.pop(start)], []
        for i in range(start, stop):
            W, b = params[i]
            z = inputs[-1] @ W + b
            if i == L - 1:
                masks.append(None)
            else:
                a, m = relu_forward_packed(z)
                masks.append(m)
                if i + 1 < stop:
                    inputs.append(a)
                del a
            del z
        for i in reversed(range(start, stop)):
            h_in, m = inputs.pop(), masks.pop()
            dz = dh if m is None else relu_backward_packed(dh, m, dh.shape)
            grads[i] = (h_in.T @ dz, dz.sum(axis=0))
            dh = dz @ params[i][0].T
            del h_in, dz
    return loss, grads
