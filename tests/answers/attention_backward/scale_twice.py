# question: attention_backward
# Another form of scale-wrong: the backward's dq and dk are scaled twice (the scale is already
# inside ds, the author thinks, and is applied again). (Otherwise row_blocks.py.)
import numpy as np

T = 128


def attention_forward(q, k, v, causal):
    B, N, d = q.shape
    o, lse = np.empty((B, N, d)), np.empty((B, N))
    for i0 in range(0, N, T):
        s = q[:, i0:i0 + T] @ k.transpose(0, 2, 1) / np.sqrt(d)  # B, T, N
        if causal:
            s = np.where(np.arange(N) > np.arange(i0, i0 + s.shape[1])[:, None], -np.inf, s)
        m = s.max(axis=2, keepdims=True)
        p = np.exp(s - m)
        l = p.sum(axis=2, keepdims=True)
        o[:, i0:i0 + T] = p @ v / l
        lse[:, i0:i0 + T] = (m + np.log(l))[:, :, 0]
    return o, lse


def attention_backward(do, q, k, v, o, lse, causal):
    B, N, d = q.shape
    scale = 1 / np.sqrt(d)
    D = np.sum(do * o, axis=2, keepdims=True)  # B, N, 1
    dq, dk, dv = np.zeros((B, N, d)), np.zeros((B, N, d)), np.zeros((B, N, d))
    for i0 in range(0, N, T):
        qi, doi = q[:, i0:i0 + T], do[:, i0:i0 + T]
        s = qi @ k.transpose(0, 2, 1) * scale  # B, T, N
        if causal:
            s = np.where(np.arange(N) > np.arange(i0, i0 + s.shape[1])[:, None], -np.inf, s)
        p = np.exp(s - lse[:, i0:i0 + T, None])
        dv += p.transpose(0, 2, 1) @ doi
        ds = p * (doi @ v.transpose(0, 2, 1) - D[:, i0:i0 + T])
        dq[:, i0:i0 + T] = ds @ k * scale * scale
        dk += ds.transpose(0, 2, 1) @ qi * scale * scale
    return dq, dk, dv
