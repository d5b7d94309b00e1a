# question: attention_backward
# Tiled and right, except that the causal path builds the whole N x N mask (69 MiB at N = 2048
# against a 16 MiB budget; issue 24, class 1): memory is checked on the causal path too.
# expect: trap=materialises-p
import numpy as np

TILE = 128


def attention_forward(q, k, v, causal):
    B, N, d = q.shape
    mask = np.tril(np.ones((N, N))) > 0 if causal else None   # N, N float64 first: the mistake
    o, lse = np.zeros_like(q), np.zeros((B, N))
    for r in range(0, N, TILE):
        s = q[:, r:r + TILE] @ np.swapaxes(k, 1, 2) / np.sqrt(d)      # B, T, N
        if causal:
            s = np.where(mask[r:r + TILE], s, -np.inf)
        m = s.max(axis=2, keepdims=True)
        e = np.exp(s - m)
        total = e.sum(axis=2, keepdims=True)
        o[:, r:r + TILE] = (e / total) @ v
        lse[:, r:r + TILE] = (m + np.log(total))[:, :, 0]
    return o, lse


def attention_backward(do, q, k, v, o, lse, causal):
    B, N, d = q.shape
    mask = np.tril(np.ones((N, N))) > 0 if causal else None   # N, N float64 first: the mistake
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    rowsum = np.sum(do * o, axis=2)                                    # B, N
    for r in range(0, N, TILE):
        s = q[:, r:r + TILE] @ np.swapaxes(k, 1, 2) / np.sqrt(d)      # B, T, N
        if causal:
            s = np.where(mask[r:r + TILE], s, -np.inf)
        p = np.exp(s - lse[:, r:r + TILE, None])                      # B, T, N
        dv += np.swapaxes(p, 1, 2) @ do[:, r:r + TILE]
        dp = do[:, r:r + TILE] @ np.swapaxes(v, 1, 2)                  # B, T, N
        ds = p * (dp - rowsum[:, r:r + TILE, None]) / np.sqrt(d)
        dq[:, r:r + TILE] = ds @ k
        dk += np.swapaxes(ds, 1, 2) @ q[:, r:r + TILE]
    return dq, dk, dv
