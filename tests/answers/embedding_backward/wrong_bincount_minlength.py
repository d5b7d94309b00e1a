# expect: trap=dense-gradient
# Counts with np.bincount(..., minlength=V) to find the touched rows: right on small tables, but
# an array of V counts cannot be allocated for a table of 2^32 rows.
def embedding_backward_sparse(dout, ids, V, padding_idx):
    D = dout.shape[-1]
    flat_ids, flat = ids.reshape(-1), dout.reshape(-1, D)
    counts = np.bincount(flat_ids, minlength=V)
    if padding_idx is not None:
        counts[padding_idx] = 0
    unique_ids = np.flatnonzero(counts).astype(np.int64)
    rows = np.zeros((len(unique_ids), D))
    for i, v in enumerate(flat_ids):
        if v != padding_idx:
            rows[np.searchsorted(unique_ids, v)] += flat[i]
    return unique_ids, rows
