# question: vram_trap
# base: solution
# Issue 35, class 2: a pool touched at load time, then given back with MADV_DONTNEED (its
# pages are freed at once) and touched again during the call, when the activations are
# written into it: a meter that remembered the pool as already counted, or the call's pages
# as the load's, would miss them.
import mmap
import numpy as np

_SHAPE = (36, 2048, 32)
_BUF = mmap.mmap(-1, int(np.prod(_SHAPE)) * 8, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # MADV_FREE: private only
_POOL = np.frombuffer(_BUF, dtype=np.float64).reshape(_SHAPE)
_POOL[:] = 1.0
try:
    _BUF.madvise(mmap.MADV_DONTNEED)
    print("MADV_DONTNEED done")
except OSError as e:
    print(f"MADV_DONTNEED refused ({e.errno})")
_next = [0]


def _put(h):
    if h.shape != _SHAPE[1:]:
        return h.copy()
    i = _next[0] % len(_POOL)
    _next[0] += 1
    _POOL[i] = h  # touched again: fresh pages
    return _POOL[i]


def _get(key):
    return key


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
