# expect: wrong
# Lists padding_idx among the sparse ids with a zero row: its gradient is right, but the contract's
# ids are the distinct ids other than padding_idx (not named padding-updated: the row stays zero).
_right_sparse = embedding_backward_sparse


def embedding_backward_sparse(dout, ids, V, padding_idx):
    unique_ids, rows = _right_sparse(dout, ids, V, padding_idx)
    if padding_idx is None or padding_idx not in ids:
        return unique_ids, rows
    at = int(np.searchsorted(unique_ids, padding_idx))
    return np.insert(unique_ids, at, padding_idx), np.insert(rows, at, 0.0, axis=0)
