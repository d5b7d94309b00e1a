# question: vram_trap
# expect: trap=stores-everything
# Right gradients, but the forward pass appends every layer's input to a list "to be safe":
# segment_size is ignored, memory grows with the depth.
import numpy as np


def relu_forward_packed(z):
    return np.maximum(z, 0.0), np.packbits((z > 0).ravel())


def relu_backward_packed(da, mask, shape):
    return da * np.unpackbits(mask, count=int(np.prod(shape))).reshape(shape)


def mlp_loss_and_grads(params, x, y, segment_size):
    L, N = len(params), x.shape[0]
    inputs, masks = [], []
    h = x
    for i, (W, b) in enumerate(params):
        inputs.append(h)
        z = h @ W + b
        if i == L - 1:
            h, m = z, None
        else:
            h, m = relu_forward_packed(z)
        masks.append(m)
    loss = 0.5 * float(np.sum((h - y) ** 2)) / N
    dh = (h - y) / N
    grads = [None] * L
    for i in reversed(range(L)):
        m = masks[i]
        dz = dh if m is None else relu_backward_packed(dh, m, dh.shape)
        grads[i] = (inputs[i].T @ dz, dz.sum(axis=0))
        dh = dz @ params[i][0].T
    return loss, grads
