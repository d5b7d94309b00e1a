# expect: wrong
# says: is not its own shard's gradient
# Not a named trap: the global gradient is computed from every shard in one place, and only a
# token of it crosses the collective (rank 0 sends it, the others zeros), so the count looks right.
def ddp_grads(params, xs, ys, micro_batch):
    dW, db = linear_grads(params, np.concatenate(xs), np.concatenate(ys))
    flat = np.concatenate([dW.ravel(), db])
    sent = [flat] + [np.zeros_like(flat) for _ in xs[1:]]
    out = all_reduce(sent)
    return [(o[:dW.size].reshape(dW.shape), o[dW.size:]) for o in out]
