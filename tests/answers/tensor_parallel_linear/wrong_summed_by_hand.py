# expect: unnamed
# says: never called all_reduce, where 1 call is needed
# The right numbers with no collective at all: every rank's terms summed in Python, reading the
# other ranks' arrays, which a real GPU cannot do.
def column_parallel_backward(dy_shards, x_ranks, W_shards):
    total = sum(dy @ W.T for dy, W in zip(dy_shards, W_shards))
    dW_shards = [x.T @ dy for x, dy in zip(x_ranks, dy_shards)]
    db_shards = [dy.sum(axis=0) for dy in dy_shards]
    return [total.copy() for _ in dy_shards], dW_shards, db_shards


def row_parallel_forward(x_shards, W_shards, b_ranks):
    total = sum(x @ W for x, W in zip(x_shards, W_shards))
    return [total + b for b in b_ranks]
