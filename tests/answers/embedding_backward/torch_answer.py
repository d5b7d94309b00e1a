# question: embedding_backward
# expect: full
# PyTorch's own embedding: F.embedding's backward with padding_idx, and sparse=True, whose
# uncoalesced COO gradient is coalesced (duplicates summed) before it is returned.
import numpy as np
import torch
import torch.nn.functional as F


def embedding_forward(W, ids, padding_idx):
    out = F.embedding(torch.from_numpy(ids), torch.from_numpy(W), padding_idx=padding_idx)
    if padding_idx is not None:
        out = out.masked_fill(torch.from_numpy(ids == padding_idx)[..., None], 0.0)
    return out.numpy()


def embedding_backward(dout, ids, V, padding_idx):
    W = torch.zeros(V, dout.shape[-1], dtype=torch.float64, requires_grad=True)
    F.embedding(torch.from_numpy(ids), W, padding_idx=padding_idx).backward(torch.from_numpy(dout))
    return W.grad.numpy()


def embedding_backward_sparse(dout, ids, V, padding_idx):
    D = dout.shape[-1]
    flat_ids, flat = torch.from_numpy(ids.reshape(-1)), torch.from_numpy(dout.reshape(-1, D))
    if padding_idx is not None:
        flat_ids, flat = flat_ids[flat_ids != padding_idx], flat[flat_ids != padding_idx]
    grad = torch.sparse_coo_tensor(flat_ids[None, :], flat, (V, D)).coalesce()  # what sparse=True gives
    return grad.indices()[0].numpy().astype(np.int64), grad.values().numpy()
