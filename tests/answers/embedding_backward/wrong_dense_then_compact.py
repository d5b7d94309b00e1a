# expect: trap=dense-gradient
# Builds the dense V x D gradient, then keeps the touched rows: the returned form is sparse, but
# the memory is V x D (on a table of 2^32 rows the allocation fails).
def embedding_backward_sparse(dout, ids, V, padding_idx):
    dW = embedding_backward(dout, ids, V, padding_idx)
    unique_ids = np.unique(ids)
    if padding_idx is not None:
        unique_ids = unique_ids[unique_ids != padding_idx]
    return unique_ids, dW[unique_ids]
