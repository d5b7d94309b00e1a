# question: ddp_accumulation
# expect: full
# Right, as a rank that does not know the global batch would do it: the row count is all-reduced
# first (one number, as a token count is in a language model), then the summed gradients once.
import numpy as np


def linear_loss(params, x, y):
    W, b = params
    d = x @ W + b - y
    return 0.5 * float((d * d).sum()) / x.shape[0]


def linear_grads(params, x, y):
    W, b = params
    d = (x @ W + b - y) / x.shape[0]
    return x.T @ d, d.sum(0)


def ddp_grads(params, xs, ys, micro_batch):
    counts = all_reduce([np.array([float(len(x))]) for x in xs])
    sums = []
    for r, (x, y) in enumerate(zip(xs, ys)):
        n_global = counts[r][0]
        acc = np.zeros(params[0].size + params[1].size)
        for a in range(0, len(x), micro_batch):
            xk, yk = x[a:a + micro_batch], y[a:a + micro_batch]
            gW, gb = linear_grads(params, xk, yk)
            acc += np.concatenate([gW.ravel(), gb]) * (len(xk) / n_global)
        sums.append(acc)
    k = params[0].size
    return [(s[:k].reshape(params[0].shape), s[k:]) for s in all_reduce(sums)]
