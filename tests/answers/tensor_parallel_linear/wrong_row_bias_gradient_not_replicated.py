# expect: wrong
# The bias gradient of the row-parallel layer split over the ranks (each rank a 1/P share), as
# if the bias were sharded: every rank must hold the whole gradient of its copy.
_right_row_backward = row_parallel_backward


def row_parallel_backward(dout_ranks, x_shards, W_shards):
    dx_shards, dW_shards, db_ranks = _right_row_backward(dout_ranks, x_shards, W_shards)
    return dx_shards, dW_shards, [d / len(db_ranks) for d in db_ranks]
