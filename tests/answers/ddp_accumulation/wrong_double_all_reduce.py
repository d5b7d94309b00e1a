# expect: wrong
# says: One all-reduce of each entry per step is enough
# Not a named trap: right values, but the summed buffers are all-reduced a second time (divided
# by R first, so the values survive): twice the traffic, whatever the number of micro-steps.
def ddp_grads(params, xs, ys, micro_batch):
    n_total = sum(len(x) for x in xs)
    buffers = []
    for x, y in zip(xs, ys):
        acc = np.zeros(params[0].size + params[1].size)
        for a in range(0, len(x), micro_batch):
            dW, db = linear_grads(params, x[a:a + micro_batch], y[a:a + micro_batch])
            acc += np.concatenate([dW.ravel(), db]) * (len(x[a:a + micro_batch]) / n_total)
        buffers.append(acc)
    once = all_reduce(buffers)
    twice = all_reduce([o / len(xs) for o in once])
    k = params[0].size
    return [(f[:k].reshape(params[0].shape), f[k:]) for f in twice]
