# question: embedding_backward
# expect: trap=dense-gradient
# PyTorch's dense gradient, then the touched rows: right on small tables, but torch cannot
# allocate a V x D tensor of 2^32 rows (a RuntimeError, not numpy's MemoryError).
import numpy as np
import torch


def embedding_forward(W, ids, padding_idx):
    out = torch.from_numpy(W)[torch.from_numpy(ids)]
    if padding_idx is not None:
        out[torch.from_numpy(ids == padding_idx)] = 0.0
    return out.numpy()


def embedding_backward(dout, ids, V, padding_idx):
    dW = torch.zeros(V, dout.shape[-1], dtype=torch.float64)
    flat_ids, flat = torch.from_numpy(ids.reshape(-1)), torch.from_numpy(dout.reshape(-1, dout.shape[-1]))
    if padding_idx is not None:
        flat_ids, flat = flat_ids[flat_ids != padding_idx], flat[flat_ids != padding_idx]
    return dW.index_add_(0, flat_ids, flat).numpy()


def embedding_backward_sparse(dout, ids, V, padding_idx):
    unique_ids = np.unique(ids)
    if padding_idx is not None:
        unique_ids = unique_ids[unique_ids != padding_idx]
    return unique_ids.astype(np.int64), embedding_backward(dout, ids, V, padding_idx)[unique_ids]
