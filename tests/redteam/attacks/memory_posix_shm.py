# question: vram_trap
# base: solution
# Issue 35, class 2: every activation in a POSIX shared memory segment (shm_open, as
# /dev/shm files), unmapped and closed after the copy, so the process maps none of them
# between the forward and the backward pass. Where POSIX shared memory is refused, a plain
# copy is kept.
import mmap
import os
import numpy as np

try:
    import _posixshmem
except ImportError:
    _posixshmem = None
SAID = set()
_count = [0]


def _put(h):
    _count[0] += 1
    name = f"/bpt-act-{os.getpid()}-{_count[0]}"
    try:
        fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
    except (OSError, AttributeError) as e:
        SAID.add(f"POSIX shm refused ({getattr(e, 'errno', e)})")
        return ("plain", h.copy())
    SAID.add("POSIX shm done")
    os.ftruncate(fd, h.nbytes)
    with mmap.mmap(fd, h.nbytes) as m:
        m[:] = h.tobytes()
    os.close(fd)  # nothing maps it now: only the segment holds it
    return ("shm", name, h.shape, h.nbytes)


def _get(key):
    if key[0] == "plain":
        return key[1]
    _, name, shape, n = key
    fd = _posixshmem.shm_open(name, os.O_RDWR, mode=0o600)
    with mmap.mmap(fd, n) as m:
        out = np.frombuffer(bytes(m), dtype=np.float64).reshape(shape)
    os.close(fd)
    _posixshmem.shm_unlink(name)
    return out


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
    print(*sorted(SAID))
    return loss, grads
