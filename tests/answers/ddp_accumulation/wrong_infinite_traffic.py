# expect: unnamed
# says: is not its own shard's gradient
# The right values, combined by hand; each rank sends P infinities through all_reduce (red team:
# a tolerance computed from them matched anything, and this got the traffic's 2 points).
def ddp_grads(params, xs, ys, micro_batch):
    all_reduce([np.full(21, np.inf) for _ in xs])
    g = linear_grads(params, np.concatenate(xs), np.concatenate(ys))
    return [tuple(v.copy() for v in g) for _ in xs]
