# question: embedding_backward
# expect: full
# A right answer the way a GPU does it without atomics: sort the positions by id, then sum each
# segment of equal ids (np.add.reduceat), in a fixed order.
import numpy as np


def embedding_forward(W, ids, padding_idx):
    out = W[ids].copy()
    if padding_idx is not None:
        out[ids == padding_idx] = 0
    return out


def _segments(dout, ids, padding_idx):
    D = dout.shape[-1]
    flat_ids, flat = ids.reshape(-1), dout.reshape(-1, D)
    if padding_idx is not None:
        flat_ids, flat = flat_ids[flat_ids != padding_idx], flat[flat_ids != padding_idx]
    if len(flat_ids) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, D))
    order = np.argsort(flat_ids, kind="stable")
    sorted_ids, sorted_rows = flat_ids[order], flat[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    return sorted_ids[starts], np.add.reduceat(sorted_rows, starts, axis=0)


def embedding_backward(dout, ids, V, padding_idx):
    unique_ids, rows = _segments(dout, ids, padding_idx)
    dW = np.zeros((V, dout.shape[-1]))
    dW[unique_ids] = rows  # each id once: assignment is safe here
    return dW


def embedding_backward_sparse(dout, ids, V, padding_idx):
    return _segments(dout, ids, padding_idx)
