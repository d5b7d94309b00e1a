# Trap padding-updated: padding_idx is handled in the forward only; the backward scatters every
# position, the padding ones included, so the padding row gets their gradient.
def embedding_backward(dout, ids, V, padding_idx):
    dW = np.zeros((V, dout.shape[-1]))
    np.add.at(dW, ids.reshape(-1), dout.reshape(-1, dout.shape[-1]))
    return dW


def embedding_backward_sparse(dout, ids, V, padding_idx):
    unique_ids, where = np.unique(ids.reshape(-1), return_inverse=True)
    rows = np.zeros((len(unique_ids), dout.shape[-1]))
    np.add.at(rows, where, dout.reshape(-1, dout.shape[-1]))
    return unique_ids, rows
