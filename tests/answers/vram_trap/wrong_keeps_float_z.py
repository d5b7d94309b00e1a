# question: vram_trap
# expect: trap=mask-not-packed
# Checkpoints are right, but each recomputed segment keeps every layer's float z (to take the
# ReLU's mask from it later) beside the layer inputs: two activations per layer, not one.
import numpy as np


def relu_forward_packed(z):
    return np.maximum(z, 0.0), np.packbits((z > 0).ravel())


def relu_backward_packed(da, mask, shape):
    return da * np.unpackbits(mask, count=int(np.prod(shape))).reshape(shape)


def mlp_loss_and_grads(params, x, y, segment_size):
    L, N = len(params), x.shape[0]
    checkpoints = []
    h = x
    for i, (W, b) in enumerate(params):
        if i % segment_size == 0:
            checkpoints.append(h)
        h = h @ W + b
        if i < L - 1:
            h = np.maximum(h, 0.0)
    loss = 0.5 * float(((h - y) ** 2).sum()) / N
    dh = (h - y) / N
    del h
    grads = [None] * L
    for seg in reversed(range(len(checkpoints))):
        start = seg * segment_size
        stop = min(start + segment_size, L)
        hs, zs = [checkpoints.pop()], []
        for i in range(start, stop):
            W, b = params[i]
            zs.append(hs[-1] @ W + b)
            hs.append(zs[-1] if i == L - 1 else np.maximum(zs[-1], 0.0))
        hs.pop()
        for i in reversed(range(start, stop)):
            z, h_in = zs.pop(), hs.pop()
            dz = dh if i == L - 1 else dh * (z > 0)
            grads[i] = (h_in.T @ dz, dz.sum(axis=0))
            dh = dz @ params[i][0].T
    return loss, grads
