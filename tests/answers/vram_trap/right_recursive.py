# question: vram_trap
# expect: full
# Recursive: each segment runs forward, hands its output to the rest of the network, and,
# once the gradient comes back, recomputes itself from its checkpoint to pass it on.
import numpy as np


def relu_forward_packed(z):
    a = z.copy()
    a[a < 0] = 0.0
    return a, np.packbits((z > 0).flatten())


def relu_backward_packed(da, mask, shape):
    size = 1
    for n in shape:
        size *= n
    return da * np.unpackbits(mask)[:size].reshape(shape).astype(np.float64)


def _segment_forward(params, h, start, stop, keep):
    L, inputs, masks = len(params), [], []
    for i in range(start, stop):
        W, b = params[i]
        if keep:
            inputs.append(h)
        z = h @ W + b
        if i == L - 1:
            h, m = z, None
        else:
            h, m = relu_forward_packed(z)
        del z
        if keep:
            masks.append(m)
    return h, inputs, masks


def _run(params, h, start, s, y, grads):
    """Returns (loss, dh at h) for layers start.. L-1 run from h."""
    L, N = len(params), y.shape[0]
    stop = min(start + s, L)
    out, _, _ = _segment_forward(params, h, start, stop, keep=False)
    if stop == L:
        loss, dh = 0.5 * float(np.sum((out - y) ** 2)) / N, (out - y) / N
    else:
        loss, dh = _run(params, out, stop, s, y, grads)
    del out
    _, inputs, masks = _segment_forward(params, h, start, stop, keep=True)
    for i in reversed(range(start, stop)):
        h_in, m = inputs.pop(), masks.pop()
        dz = dh if m is None else relu_backward_packed(dh, m, dh.shape)
        grads[i] = (h_in.T @ dz, dz.sum(axis=0))
        dh = dz @ params[i][0].T
        del h_in, dz
    return loss, dh


def mlp_loss_and_grads(params, x, y, segment_size):
    grads = [None] * len(params)
    loss, _ = _run(params, x, 0, segment_size, y, grads)
    return loss, grads
