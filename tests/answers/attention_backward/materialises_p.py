# question: attention_backward
# Trap materialises-p: right values, written the textbook way: the forward builds the whole
# (B, N, N) matrix of scores and probabilities, the backward builds P, dP and dS whole.
# At N = 2048 each is 32 MiB: memory over budget in both functions.
import numpy as np


def scores(q, k, causal):
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[2])  # B, N, N
    if causal:
        s[:, np.triu(np.ones(s.shape[1:], dtype=bool), 1)] = -np.inf
    return s


def attention_forward(q, k, v, causal):
    s = scores(q, k, causal)
    m = s.max(axis=2, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(axis=2, keepdims=True)
    return (p / l) @ v, (m + np.log(l))[:, :, 0]


def attention_backward(do, q, k, v, o, lse, causal):
    scale = 1 / np.sqrt(q.shape[2])
    p = np.exp(scores(q, k, causal) - lse[:, :, None])  # B, N, N
    dv = p.transpose(0, 2, 1) @ do
    dp = do @ v.transpose(0, 2, 1)  # B, N, N
    ds = p * (dp - np.sum(do * o, axis=2, keepdims=True))  # B, N, N
    return ds @ k * scale, ds.transpose(0, 2, 1) @ q * scale, dv
