# question: vram_trap
# base: solution
# Issue 35, class 2: a pool for every activation, touched at load time and then freed with
# MADV_FREE. Its pages stay charged, but since Linux 4.12 they sit on the inactive *file* LRU
# list, so a meter that counts "usage less the file lists" sees nothing held; the call then
# writes its activations into the pool, and a lazily freed page written again is simply kept:
# nothing new is charged (vram_trap 12/12 instead of 9/12 before). __FREE__ is True for the
# attack, False for the same pool without the advice.
import mmap
import numpy as np

FREE = __FREE__
_SHAPE = (36, 2048, 32)  # one slot per layer input of the memory check's net (18 MiB)
_BUF = mmap.mmap(-1, int(np.prod(_SHAPE)) * 8, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # MADV_FREE: private only
_POOL = np.frombuffer(_BUF, dtype=np.float64).reshape(_SHAPE)
_POOL[:] = 1.0  # resident from load time
if FREE:
    try:
        _BUF.madvise(mmap.MADV_FREE)
        print("MADV_FREE done")
    except OSError as e:
        print(f"MADV_FREE refused ({e.errno})")
_next = [0]


def _put(h):
    if h.shape != _SHAPE[1:]:
        return h.copy()
    i = _next[0] % len(_POOL)
    _next[0] += 1
    _POOL[i] = h
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
