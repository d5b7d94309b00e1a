# Trap summed-not-averaged: each rank's buffer is its own shard's mean gradient (n_rk / n_r), and
# the all-reduce's sum over the ranks is never divided by R: R times too large with equal shards.
def ddp_grads(params, xs, ys, micro_batch):
    buffers = []
    for x, y in zip(xs, ys):
        local = [np.zeros(p.shape) for p in params]
        for start in range(0, len(x), micro_batch):
            x_k, y_k = x[start:start + micro_batch], y[start:start + micro_batch]
            for buffer, g in zip(local, linear_grads(params, x_k, y_k)):
                buffer += (len(x_k) / len(x)) * g
        buffers.append(np.concatenate([b.ravel() for b in local]))
    W = params[0]
    return [(f[:W.size].reshape(W.shape), f[W.size:]) for f in all_reduce(buffers)]
