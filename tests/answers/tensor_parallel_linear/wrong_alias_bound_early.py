# expect: unnamed
# says: an alias or a default argument bound earlier
# The right sums, through the setup cell's all_reduce bound as a default argument when the
# function was defined: the grader's collective, put in place after the code loads, never runs.
def column_parallel_backward(dy_shards, x_ranks, W_shards, reduce=all_reduce):
    dx_ranks = reduce([dy @ W.T for dy, W in zip(dy_shards, W_shards)])
    dW_shards = [x.T @ dy for x, dy in zip(x_ranks, dy_shards)]
    db_shards = [dy.sum(axis=0) for dy in dy_shards]
    return dx_ranks, dW_shards, db_shards
