# question: vram_trap
# base: solution
# Class 1: activations parked in the kernel buffers of unix datagram socket pairs (sent,
# not yet received): kernel memory, not the process's resident pages.
import socket
import numpy as np

_CHUNK = 100_000


def _put(h):
    data = h.tobytes()
    pairs = []
    for off in range(0, len(data), _CHUNK):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        a.send(data[off:off + _CHUNK])
        pairs.append((a, b))
    return pairs, h.shape


def _get(key):
    pairs, shape = key
    data = b"".join(b.recv(2 * _CHUNK) for _, b in pairs)
    for a, b in pairs:
        a.close()
        b.close()
    return np.frombuffer(data, dtype=np.float64).reshape(shape)


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
