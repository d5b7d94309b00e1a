# Trap double-all-reduce: the row-parallel backward all-reduces the gradient at its output, as if
# g's backward were an all-reduce too; every rank already holds that gradient whole, so the sum of
# P copies makes every gradient below it P times too large.
def row_parallel_backward(dout_ranks, x_shards, W_shards):
    dout_ranks = all_reduce(dout_ranks)
    dx_shards = [d @ W.T for d, W in zip(dout_ranks, W_shards)]
    dW_shards = [x.T @ d for x, d in zip(x_shards, dout_ranks)]
    db_ranks = [d.sum(axis=0) for d in dout_ranks]
    return dx_shards, dW_shards, db_ranks
