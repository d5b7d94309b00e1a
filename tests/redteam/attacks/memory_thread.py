# question: vram_trap
# base: solution
# Class 1: the whole stores-everything pass runs in a thread (a meter that watched only the
# main thread would miss it).
import threading
import numpy as np


def _put(h):
    return h


def _get(key):
    return key


_plain = None  # set below


def _in_thread(*args):
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", _plain(*args)))
    t.start()
    t.join()
    return out["r"]


def mlp_loss_and_grads(params, x, y, segment_size):
    """Right gradients; every layer input kept until the backward pass (stores-everything),
    but kept through _put/_get, where the attack hides them from the meter."""
    L, N = len(params), x.shape[0]
    kept, masks, h = [], [], x
    for i, (W, b) in enumerate(params):
        kept.append(_put(h))
        z = h @ W + b
        if i < L - 1:
            h, mask = relu_forward_packed(z)
            masks.append(mask)
        else:
            h = z
        del z
    loss = 0.5 * float(np.sum((h - y) ** 2)) / N
    dh = (h - y) / N
    grads = [None] * L
    for i in reversed(range(L)):
        dz = dh if i == L - 1 else relu_backward_packed(dh, masks[i], dh.shape)
        grads[i] = (_get(kept[i]).T @ dz, dz.sum(axis=0))
        kept[i] = None
        dh = dz @ params[i][0].T
    return loss, grads


_plain, mlp_loss_and_grads = mlp_loss_and_grads, _in_thread
