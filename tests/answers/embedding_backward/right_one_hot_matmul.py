# question: embedding_backward
# expect: full
# A right answer from the derivation's one-hot product: dW = onehot(ids)^T dout, with the
# one-hot matrix over the distinct ids only for the sparse form (nothing of size V there).
import numpy as np


def embedding_forward(W, ids, padding_idx):
    mask = (ids != padding_idx)[..., None] if padding_idx is not None else 1.0
    return np.take(W, ids, axis=0) * mask


def embedding_backward(dout, ids, V, padding_idx):
    flat = ids.reshape(-1)
    onehot = (flat[:, None] == np.arange(V)[None, :]).astype(np.float64)  # B*T, V
    if padding_idx is not None:
        onehot[:, padding_idx] = 0.0
    return onehot.T @ dout.reshape(-1, dout.shape[-1])


def embedding_backward_sparse(dout, ids, V, padding_idx):
    flat = ids.reshape(-1)
    unique_ids = np.unique(flat[flat != padding_idx]) if padding_idx is not None else np.unique(flat)
    onehot = (flat[:, None] == unique_ids[None, :]).astype(np.float64)  # B*T, U
    return unique_ids.astype(np.int64), onehot.T @ dout.reshape(-1, dout.shape[-1])
