# Trap dx-not-all-reduced: the column-parallel layer's backward hands each rank its own term of
# dx and never sums them (the all-reduce of Megatron's f is missing).
def column_parallel_backward(dy_shards, x_ranks, W_shards):
    dx_ranks = [dy @ W.T for dy, W in zip(dy_shards, W_shards)]
    dW_shards = [x.T @ dy for x, dy in zip(x_ranks, dy_shards)]
    db_shards = [dy.sum(axis=0) for dy in dy_shards]
    return dx_ranks, dW_shards, db_shards
