# expect: unnamed
# says: not in what all_reduce returned
# The right values, combined by hand from every shard; each rank sends its own shard's gradient,
# sorted, so the traffic looks right (its own values, once), but what all_reduce returns (a sum
# of sorted buffers) is not the gradient, and the answer does not come from it (red team: this
# got the traffic's 2 points).
def ddp_grads(params, xs, ys, micro_batch):
    own = [np.sort(np.concatenate([g.ravel() for g in linear_grads(params, x, y)]) * len(x))
           for x, y in zip(xs, ys)]
    all_reduce(own)
    g = linear_grads(params, np.concatenate(xs), np.concatenate(ys))
    return [tuple(v.copy() for v in g) for _ in xs]
