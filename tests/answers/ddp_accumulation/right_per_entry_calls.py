# expect: full
# (red team: the traffic check lost this answer its 2 points, "not its own shard's gradient")
# Right: the global row count all-reduced first, then every gradient entry all-reduced on its own
# (one call per entry, as a per-parameter-element bucketing would): P + 1 values per rank.
def ddp_grads(params, xs, ys, micro_batch):
    W, b = params
    N = all_reduce([np.array([float(len(x))]) for x in xs])[0][0]
    bufs = []
    for x, y in zip(xs, ys):
        acc = np.zeros(W.size + b.size)
        for s in range(0, len(x), micro_batch):
            xk, yk = x[s:s + micro_batch], y[s:s + micro_batch]
            dW, db = linear_grads(params, xk, yk)
            acc += len(xk) / N * np.concatenate([dW.ravel(), db])
        bufs.append(acc)
    total = np.array([all_reduce([buf[i:i + 1] for buf in bufs])[0][0] for i in range(W.size + b.size)])
    return [(total[:W.size].reshape(W.shape).copy(), total[W.size:].copy()) for _ in xs]
