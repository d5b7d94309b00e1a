# question: embedding_backward
# expect: full
# A right answer written with plain loops over the positions, the way one derives it on paper.
import numpy as np


def embedding_forward(W, ids, padding_idx):
    B, T = ids.shape
    out = np.zeros((B, T, W.shape[1]))
    for b in range(B):
        for t in range(T):
            if ids[b, t] != padding_idx:
                out[b, t] = W[ids[b, t]]
    return out


def embedding_backward(dout, ids, V, padding_idx):
    B, T, D = dout.shape
    dW = np.zeros((V, D))
    for b in range(B):
        for t in range(T):
            if ids[b, t] != padding_idx:
                dW[ids[b, t]] += dout[b, t]  # one row at a time: every occurrence adds
    return dW


def embedding_backward_sparse(dout, ids, V, padding_idx):
    B, T, D = dout.shape
    sums = {}
    for b in range(B):
        for t in range(T):
            v = int(ids[b, t])
            if v != padding_idx:
                sums[v] = sums.get(v, 0.0) + dout[b, t]
    unique_ids = np.array(sorted(sums), dtype=np.int64)
    rows = np.array([sums[v] for v in unique_ids]).reshape(len(unique_ids), D)
    return unique_ids, rows
