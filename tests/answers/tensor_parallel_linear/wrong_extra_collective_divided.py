# expect: trap=double-all-reduce
# says: called all_reduce once
# Right values, one collective too many: the bias gradient of the row-parallel layer is
# all-reduced and divided by P to undo it. The numbers agree; the communication does not.
_right_row_backward = row_parallel_backward


def row_parallel_backward(dout_ranks, x_shards, W_shards):
    dx_shards, dW_shards, db_ranks = _right_row_backward(dout_ranks, x_shards, W_shards)
    return dx_shards, dW_shards, [d / len(db_ranks) for d in all_reduce(db_ranks)]
