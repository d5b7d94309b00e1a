# question: vram_trap
# expect: full
# Segments as (start, stop) pairs walked in reverse with a generator; masks from np.clip.
import numpy as np


def relu_forward_packed(z):
    a = np.clip(z, 0.0, None)
    return a, np.packbits(z.reshape(-1) > 0)


def relu_backward_packed(da, mask, shape):
    n = int(np.prod(shape))
    return np.where(np.unpackbits(mask)[:n].reshape(shape).astype(bool), da, 0.0)


def _segments(L, s):
    starts = list(range(0, L, s))
    for a in reversed(starts):
        yield a, min(a + s, L)


def mlp_loss_and_grads(params, x, y, segment_size):
    L, N = len(params), len(x)
    keep, h = {}, x
    for i, (W, b) in enumerate(params):
        if i % segment_size == 0:
            keep[i] = h
        z = h @ W + b
        h = z if i == L - 1 else np.clip(z, 0.0, None)
    loss = 0.5 * float(((h - y) ** 2).sum()) / N
    dh = (h - y) / N
    del h
    grads = [None] * L
    for a, e in _segments(L, segment_size):
        ins, masks = [keep.pop(a)], []
        for i in range(a, e):
            W, b = params[i]
            z = ins[-1] @ W + b
            if i == L - 1:
                masks.append(None)
                break
            act, m = relu_forward_packed(z)
            masks.append(m)
            if i + 1 < e:
                ins.append(act)
            del z, act
        for i in reversed(range(a, e)):
            m = masks.pop()
            dz = dh if m is None else relu_backward_packed(dh, m, dh.shape)
            grads[i] = (ins[i - a].T @ dz, dz.sum(0))
            dh = dz @ params[i][0].T
        del ins
    return loss, grads
