# question: vram_trap
# base: solution
# Class 1, round 2: a stores-everything answer that first evicts every file page it can reach
# (posix_fadvise DONTNEED on every module file and .pyc it has read and every file it maps,
# madvise PAGEOUT / COLD (DONTNEED on code) on every file mapping of its own), at load time and
# again during the call, so its activations would fill the room the page cache left.
# __EVICT__ is True for the attack, False for the same code without the eviction.
import ctypes
import os
import sys
import numpy as np

EVICT = __EVICT__
_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def _files():
    """Every file this process has read pages of: its modules' sources and .pyc files, and
    every file it maps (libraries, numpy's extension modules)."""
    found = set()
    for module in list(sys.modules.values()):
        for attr in ("__file__", "__cached__"):
            path = getattr(module, attr, None)
            if isinstance(path, str):
                found.add(path)
    with open("/proc/self/maps") as maps:
        found.update(line.split()[5] for line in maps if len(line.split()) >= 6 and line.split()[5].startswith("/"))
    return found


def _evict():
    said = {"fadvise": 0, "madvise": 0, "refused": 0}
    for path in _files():
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            said["fadvise"] += 1
        except OSError:
            said["refused"] += 1
        finally:
            os.close(fd)
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or not fields[5].startswith("/"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            # MADV_PAGEOUT, MADV_COLD; MADV_DONTNEED only on code (on written pages it crashes)
            for advice in (21, 20) + ((4,) if fields[1] == "r-xp" else ()):
                if _libc.madvise(start, end - start, advice) == 0:
                    said["madvise"] += 1
                else:
                    said["refused"] += 1
    print("EVICTED", said)


if EVICT:
    _evict()  # before the call: at load time


def _put(h):
    return h


def _get(key):
    return key


def mlp_loss_and_grads(params, x, y, segment_size):
    """Right gradients; every layer input kept until the backward pass (stores-everything)."""
    if EVICT:
        _evict()  # during the call, before the activations pile up
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
        if EVICT and i == L // 2:
            _evict()  # and again halfway
    loss = 0.5 * float(np.sum((h - y) ** 2)) / N
    dh = (h - y) / N
    grads = [None] * L
    for i in reversed(range(L)):
        dz = dh if i == L - 1 else relu_backward_packed(dh, masks[i], dh.shape)
        grads[i] = (_get(kept[i]).T @ dz, dz.sum(axis=0))
        kept[i] = None
        dh = dz @ params[i][0].T
    return loss, grads
