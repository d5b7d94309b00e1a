# expect: unnamed
# says: not the sums all_reduce returned
# Summed by hand, with one all_reduce on zeros so that the count looks right.
def column_parallel_backward(dy_shards, x_ranks, W_shards):
    all_reduce([np.zeros(1) for _ in dy_shards])
    total = sum(dy @ W.T for dy, W in zip(dy_shards, W_shards))
    dW_shards = [x.T @ dy for x, dy in zip(x_ranks, dy_shards)]
    db_shards = [dy.sum(axis=0) for dy in dy_shards]
    return [total.copy() for _ in dy_shards], dW_shards, db_shards
