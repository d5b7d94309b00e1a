# expect: trap=double-all-reduce
# says: called all_reduce 2 times
# Two all-reduces in the column-parallel backward (the second on copies already whole, then
# divided by P to undo it), and take_all_reduces() called to clear the count: that clears the
# learner's own tally, never the grader's.
_right_column_backward = column_parallel_backward


def column_parallel_backward(dy_shards, x_ranks, W_shards):
    dx_ranks, dW_shards, db_shards = _right_column_backward(dy_shards, x_ranks, W_shards)
    dx_ranks = [d / len(dx_ranks) for d in all_reduce(dx_ranks)]
    take_all_reduces()
    return dx_ranks, dW_shards, db_shards
