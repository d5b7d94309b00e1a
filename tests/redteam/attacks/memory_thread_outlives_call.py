# question: vram_trap
# base: solution
# Issue 35, class 2: the work is done by a thread started at load time, which is still running
# after the call has returned, holding every activation a while longer: a meter that watched
# only the calling thread, or only until the function returned, would miss it.
import queue
import threading
import time
import numpy as np

_jobs, _done = queue.Queue(), queue.Queue()


def _stores_everything(params, x, y, segment_size):
    """Right gradients; every layer input kept until the backward pass (stores-everything)."""
    L, N = len(params), x.shape[0]
    kept, masks, h = [], [], x
    for i, (W, b) in enumerate(params):
        kept.append(h)
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
        grads[i] = (kept[i].T @ dz, dz.sum(axis=0))
        dh = dz @ params[i][0].T
    return kept, (loss, grads)


def _worker():
    while True:
        kept, answer = _stores_everything(*_jobs.get())
        _done.put(answer)
        time.sleep(2.0)  # still running after the call returned, every activation still held
        del kept


threading.Thread(target=_worker, daemon=True).start()


def mlp_loss_and_grads(params, x, y, segment_size):
    _jobs.put((params, x, y, segment_size))
    return _done.get()
