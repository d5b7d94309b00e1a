# expect: full
# Right, written the other way round: each layer gathers the shards into whole matrices, does the
# one-device math, and splits the result back, with the all-reduce where the per-rank terms are.
def column_parallel_forward(x_ranks, W_shards, b_shards):
    y = x_ranks[0] @ np.concatenate(W_shards, axis=1) + np.concatenate(b_shards)
    return np.split(y, len(W_shards), axis=1)


def column_parallel_backward(dy_shards, x_ranks, W_shards):
    P = len(W_shards)
    dx_ranks = all_reduce([np.einsum("nj,ij->ni", dy, W) for dy, W in zip(dy_shards, W_shards)])
    dW = np.einsum("ni,nj->ij", x_ranks[0], np.concatenate(dy_shards, axis=1))
    return dx_ranks, np.split(dW, P, axis=1), np.split(np.concatenate(dy_shards, axis=1).sum(axis=0), P)


def row_parallel_forward(x_shards, W_shards, b_ranks):
    reduced = all_reduce([np.einsum("ni,ij->nj", x, W) for x, W in zip(x_shards, W_shards)])
    return [y + b for y, b in zip(reduced, b_ranks)]


def row_parallel_backward(dout_ranks, x_shards, W_shards):
    P, dout = len(W_shards), dout_ranks[0]
    dx = dout @ np.concatenate(W_shards, axis=0).T
    dW = np.concatenate(x_shards, axis=1).T @ dout
    return np.split(dx, P, axis=1), np.split(dW, P, axis=0), [d.sum(axis=0) for d in dout_ranks]
