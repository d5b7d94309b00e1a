# expect: wrong
# says: never called all_reduce
# Not a named trap: right values on every rank, but the shards are stacked and the gradient
# computed in one place: nothing crosses the collective.
def ddp_grads(params, xs, ys, micro_batch):
    g = linear_grads(params, np.concatenate(xs), np.concatenate(ys))
    return [g for _ in xs]
