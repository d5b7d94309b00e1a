# question: ddp_accumulation
# expect: full
# Right: one all-reduce per parameter (DDP's buckets, one per tensor), once per step, after the
# summed gradients of every micro-batch are divided by the global batch's rows.
import numpy as np


def linear_loss(params, x, y):
    W, b = params
    return float(0.5 * np.sum((x @ W + b - y) ** 2) / len(x))


def linear_grads(params, x, y):
    W, b = params
    r = (x @ W + b - y) / len(x)
    return x.T @ r, r.sum(axis=0)


def ddp_grads(params, xs, ys, micro_batch):
    N = sum(len(x) for x in xs)
    dWs, dbs = [], []
    for x, y in zip(xs, ys):
        dW, db = np.zeros_like(params[0]), np.zeros_like(params[1])
        for a in range(0, len(x), micro_batch):
            gW, gb = linear_grads(params, x[a:a + micro_batch], y[a:a + micro_batch])
            n_k = len(x[a:a + micro_batch])
            dW += gW * n_k / N
            db += gb * n_k / N
        dWs.append(dW)
        dbs.append(db)
    return list(zip(all_reduce(dWs), all_reduce(dbs)))
