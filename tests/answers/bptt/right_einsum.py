# question: bptt
# expect: full
# A right answer that keeps every step's dz and forms the weight gradients afterwards, all
# steps at once with einsum over (t, n); the chunk boundaries come from a mask.
import numpy as np


def rnn_forward(x, h0, W_xh, W_hh, b):
    hs = []
    for x_t in x:
        hs.append(np.tanh(x_t @ W_xh + (hs[-1] if hs else h0) @ W_hh + b))
    return np.array(hs)


def rnn_backward(dhs, x, h0, hs, W_xh, W_hh, k):
    T = len(x)
    keeps = np.array([0.0 if (t > 0 and t % k == 0) else 1.0 for t in range(T)])  # carry out of t kept?
    dzs = np.zeros_like(hs)
    dh = np.zeros_like(h0)
    for t in range(T - 1, -1, -1):
        dzs[t] = (dhs[t] + dh) * (1 - hs[t] ** 2)
        dh = keeps[t] * dzs[t] @ W_hh.T if t > 0 else dzs[t] @ W_hh.T
    h_prev = np.concatenate([h0[None], hs[:-1]])  # T, N, H
    return (np.einsum("tnh,dh->tnd", dzs, W_xh), dh, np.einsum("tnd,tnh->dh", x, dzs),
            np.einsum("tni,tnj->ij", h_prev, dzs), dzs.sum(axis=(0, 1)))


def clip_grad_norm(grads, max_norm):
    total = float(np.sqrt(sum(np.vdot(g, g) for g in grads)))
    scale = min(1.0, max_norm / total) if total > 0 else 1.0
    return [np.multiply(g, scale) for g in grads], total
