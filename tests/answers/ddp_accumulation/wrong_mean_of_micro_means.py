# expect: wrong
# says: with the weights
# Not a named trap: every micro-step's mean loss divided by R x K_r (world size times the rank's
# accumulation steps): right only when every shard and every micro-batch are equal.
def ddp_grads(params, xs, ys, micro_batch):
    R = len(xs)
    buffers = []
    for x, y in zip(xs, ys):
        starts = range(0, len(x), micro_batch)
        acc = np.zeros(params[0].size + params[1].size)
        for a in starts:
            dW, db = linear_grads(params, x[a:a + micro_batch], y[a:a + micro_batch])
            acc += np.concatenate([dW.ravel(), db]) / (R * len(starts))
        buffers.append(acc)
    k = params[0].size
    return [(f[:k].reshape(params[0].shape), f[k:]) for f in all_reduce(buffers)]
