# expect: full
# (red team: the traffic check lost this answer its 2 points, "not its own shard's gradient")
# Right: every rank sums its rows' gradients and its row count in one bucket; one all-reduce
# gives the global sum and N; divide after it (the ranks need not know N beforehand).
def ddp_grads(params, xs, ys, micro_batch):
    W, b = params
    buckets = []
    for x, y in zip(xs, ys):
        acc = np.zeros(W.size + b.size + 1)
        for s in range(0, len(x), micro_batch):
            xk, yk = x[s:s + micro_batch], y[s:s + micro_batch]
            dW, db = linear_grads(params, xk, yk)
            acc[:-1] += len(xk) * np.concatenate([dW.ravel(), db])
        acc[-1] = len(x)
        buckets.append(acc)
    out = []
    for total in all_reduce(buckets):
        g = total[:-1] / total[-1]
        out.append((g[:W.size].reshape(W.shape), g[W.size:]))
    return out
