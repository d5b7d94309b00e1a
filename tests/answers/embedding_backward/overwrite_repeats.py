# Trap overwrite-repeats: `dW[ids] += dout` with numpy's fancy indexing reads each row once and
# writes it back once, so a repeated id keeps only its last position's gradient; the sparse form
# does the same over the distinct ids' positions.
def embedding_backward(dout, ids, V, padding_idx):
    D = dout.shape[-1]
    flat_ids, flat = ids.reshape(-1), dout.reshape(-1, D)
    if padding_idx is not None:
        keep = flat_ids != padding_idx
        flat_ids, flat = flat_ids[keep], flat[keep]
    dW = np.zeros((V, D))
    dW[flat_ids] += flat
    return dW


def embedding_backward_sparse(dout, ids, V, padding_idx):
    D = dout.shape[-1]
    flat_ids, flat = ids.reshape(-1), dout.reshape(-1, D)
    if padding_idx is not None:
        keep = flat_ids != padding_idx
        flat_ids, flat = flat_ids[keep], flat[keep]
    unique_ids, where = np.unique(flat_ids, return_inverse=True)
    rows = np.zeros((len(unique_ids), D))
    rows[where] += flat
    return unique_ids, rows
