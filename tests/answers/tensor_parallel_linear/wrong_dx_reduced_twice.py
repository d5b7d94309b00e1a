# expect: trap=double-all-reduce
# The column-parallel backward all-reduces dx, then all-reduces the already reduced copies
# again: P equal copies summed, P times the gradient.
_right_column_backward = column_parallel_backward


def column_parallel_backward(dy_shards, x_ranks, W_shards):
    dx_ranks, dW_shards, db_shards = _right_column_backward(dy_shards, x_ranks, W_shards)
    return all_reduce(dx_ranks), dW_shards, db_shards
