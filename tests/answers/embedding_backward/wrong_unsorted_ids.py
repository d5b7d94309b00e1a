# expect: wrong
# The distinct ids in order of first appearance, not ascending (the rows follow them).
def embedding_backward_sparse(dout, ids, V, padding_idx):
    D = dout.shape[-1]
    order, rows = {}, []
    for v, g in zip(ids.reshape(-1).tolist(), dout.reshape(-1, D)):
        if v == padding_idx:
            continue
        if v not in order:
            order[v] = len(rows)
            rows.append(np.zeros(D))
        rows[order[v]] = rows[order[v]] + g
    return np.array(list(order), dtype=np.int64), np.array(rows).reshape(-1, D)
