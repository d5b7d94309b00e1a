# Trap ranks-not-synced: no all-reduce at all; each rank keeps its own shard's mean gradient.
def ddp_grads(params, xs, ys, micro_batch):
    out = []
    for x, y in zip(xs, ys):
        local = [np.zeros(p.shape) for p in params]
        for start in range(0, len(x), micro_batch):
            x_k, y_k = x[start:start + micro_batch], y[start:start + micro_batch]
            for buffer, g in zip(local, linear_grads(params, x_k, y_k)):
                buffer += (len(x_k) / len(x)) * g
        out.append(tuple(local))
    return out
