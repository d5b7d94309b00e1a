# question: ddp_accumulation
# expect: full
# Right, PyTorch DDP's way: the all-reduce averages (sum / R), so every micro-step's mean loss is
# scaled by R * n_rk / N; the ranks' buffers go through one stacked (R, P) array.
import numpy as np


def linear_loss(params, x, y):
    W, b = params
    return float(np.mean(np.sum((x @ W + b - y) ** 2, axis=1)) / 2)


def linear_grads(params, x, y):
    W, b = params
    dout = (x @ W + b - y) / x.shape[0]
    return np.einsum("ni,no->io", x, dout), dout.sum(axis=0)


def ddp_grads(params, xs, ys, micro_batch):
    R, N = len(xs), sum(x.shape[0] for x in xs)
    W, b = params
    stacked = np.zeros((R, W.size + b.size))
    for r in range(R):
        for a in range(0, xs[r].shape[0], micro_batch):
            x_k, y_k = xs[r][a:a + micro_batch], ys[r][a:a + micro_batch]
            dW, db = linear_grads(params, x_k, y_k)
            stacked[r] += (R * x_k.shape[0] / N) * np.concatenate([dW.ravel(), db])
    averaged = [g / R for g in all_reduce(stacked)]
    return [(g[:W.size].reshape(W.shape), g[W.size:]) for g in averaged]
