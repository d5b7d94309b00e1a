# expect: wrong
# says: never called all_reduce
# Not a named trap: the setup cell's all_reduce is bound to another name when the code loads, so
# the calls go to that copy, never to the grader's.
_my_all_reduce = all_reduce


def ddp_grads(params, xs, ys, micro_batch):
    n_total = sum(len(x) for x in xs)
    buffers = []
    for x, y in zip(xs, ys):
        acc = np.zeros(params[0].size + params[1].size)
        for a in range(0, len(x), micro_batch):
            dW, db = linear_grads(params, x[a:a + micro_batch], y[a:a + micro_batch])
            acc += np.concatenate([dW.ravel(), db]) * (len(x[a:a + micro_batch]) / n_total)
        buffers.append(acc)
    k = params[0].size
    return [(f[:k].reshape(params[0].shape), f[k:]) for f in _my_all_reduce(buffers)]
