# question: attention_backward
# expect: full
# One query row at a time: never more than N scores alive.
import numpy as np


def attention_forward(q, k, v, causal):
    B, N, d = q.shape
    scale = 1.0 / np.sqrt(d)
    o = np.zeros_like(q)
    lse = np.zeros((B, N))
    for b in range(B):
        for i in range(N):
            stop = i + 1 if causal else N
            s = (k[b, :stop] @ q[b, i]) * scale            # stop
            m = s.max()
            e = np.exp(s - m)
            z = e.sum()
            o[b, i] = (e @ v[b, :stop]) / z
            lse[b, i] = m + np.log(z)
    return o, lse


def attention_backward(do, q, k, v, o, lse, causal):
    B, N, d = q.shape
    scale = 1.0 / np.sqrt(d)
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    D = np.einsum("bnd,bnd->bn", do, o)
    for b in range(B):
        for i in range(N):
            stop = i + 1 if causal else N
            p = np.exp((k[b, :stop] @ q[b, i]) * scale - lse[b, i])   # stop
            dv[b, :stop] += np.outer(p, do[b, i])
            ds = p * (v[b, :stop] @ do[b, i] - D[b, i])
            dq[b, i] = scale * (ds @ k[b, :stop])
            dk[b, :stop] += scale * np.outer(ds, q[b, i])
    return dq, dk, dv
