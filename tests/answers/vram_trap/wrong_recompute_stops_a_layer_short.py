# question: vram_trap
# expect: trap=wrong-recompute
# Quadratic recompute (each layer input rebuilt from the checkpoint when needed) that stops one
# layer short: a layer skipped, not a wrong start, so no "equal those of" claim may be made.
import numpy as np


def relu_forward_packed(z):
    pos = np.greater(z, 0)
    return np.where(pos, z, 0.0), np.packbits(pos.reshape(-1))


def relu_backward_packed(da, mask, shape):
    size = int(np.prod(shape))
    bits = (mask[np.arange(size) >> 3] >> (7 - (np.arange(size) & 7))) & 1
    return da * bits.reshape(shape)


def mlp_loss_and_grads(params, x, y, segment_size):
    L = len(params)
    starts = list(range(0, L, segment_size))
    ckpt = {}
    h = x
    for i in range(L):
        if i in starts:
            ckpt[i] = h
        h = _layer(params, i, h)[0]
    N = x.shape[0]
    diff = h - y
    loss = 0.5 * float(np.einsum("ij,ij->", diff, diff)) / N
    dh = diff / N
    del h, diff
    grads = [None] * L
    for i in reversed(range(L)):
        start = max(s for s in starts if s <= i)
        inp = ckpt[start]
        for j in range(start, i - 1):
            inp = _layer(params, j, inp)[0]
        _, mask = _layer(params, i, inp)
        dz = dh if mask is None else relu_backward_packed(dh, mask, dh.shape)
        W = params[i][0]
        grads[i] = (inp.T @ dz, dz.sum(0))
        dh = dz @ W.T
        if i == start:
            del ckpt[start]
    return loss, grads


def _layer(params, i, h):
    W, b = params[i]
    z = h @ W + b
    if i == len(params) - 1:
        return z, None
    return relu_forward_packed(z)
