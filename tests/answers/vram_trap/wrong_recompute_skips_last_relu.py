# question: vram_trap
# The recomputed segment skips the ReLU of its last layer (no mask kept for it), so that
# layer's gradient passes ungated. The forward and the loss are right; the gradients change
# with segment_size, also at segment_size=1 (issue 24, class 3: named by that behaviour).
# expect: trap=wrong-recompute
import numpy as np


def relu_forward_packed(z):
    return np.maximum(z, 0.0), np.packbits((z > 0).ravel())


def relu_backward_packed(da, mask, shape):
    keep = np.unpackbits(mask, count=int(np.prod(shape))).reshape(shape).astype(bool)
    return np.where(keep, da, 0.0)


def mlp_loss_and_grads(params, x, y, segment_size):
    L, N = len(params), x.shape[0]

    def layer(i, h, relu=True):
        W, b = params[i]
        z = h @ W + b
        return (z, None) if i == L - 1 or not relu else relu_forward_packed(z)

    checkpoints, h = {}, x
    for i in range(L):
        if i % segment_size == 0:
            checkpoints[i] = h
        h, _ = layer(i, h)
    loss = 0.5 * float(np.sum((h - y) ** 2)) / N
    dh = (h - y) / N
    grads = [None] * L
    for start in reversed(range(0, L, segment_size)):
        stop = min(start + segment_size, L)
        inputs, masks = [checkpoints.pop(start)], []
        for i in range(start, stop):
            out, mask = layer(i, inputs[-1], relu=i < stop - 1)  # the segment's last ReLU skipped
            inputs.append(out)
            masks.append(mask)
        for i in reversed(range(start, stop)):
            mask = masks[i - start]
            dz = dh if mask is None else relu_backward_packed(dh, mask, dh.shape)
            grads[i] = (inputs[i - start].T @ dz, dz.sum(axis=0))
            dh = dz @ params[i][0].T
    return loss, grads
