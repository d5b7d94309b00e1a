# question: weight_tying
# expect: full
# A right answer with explicit loops, the way one derives it on paper: position by position,
# the projection's share into every row of dE, then the lookup's share into the row of the id.
import math

import numpy as np


def tied_lm_forward(E, W, ids, targets):
    V, D = E.shape
    N = len(ids)
    x, h, p = np.zeros((N, D)), np.zeros((N, D)), np.zeros((N, V))
    total = 0.0
    for n in range(N):
        x[n] = E[ids[n]]
        for j in range(D):
            h[n, j] = math.tanh(sum(x[n, i] * W[i, j] for i in range(D)))
        logits = [sum(h[n, d] * E[v, d] for d in range(D)) for v in range(V)]
        top = max(logits)
        norm = sum(math.exp(l - top) for l in logits)
        for v in range(V):
            p[n, v] = math.exp(logits[v] - top) / norm
        total += -(logits[targets[n]] - top - math.log(norm))
    return total / N, {"x": x, "h": h, "p": p}


def tied_lm_backward(E, W, cache, ids, targets):
    x, h, p = cache["x"], cache["h"], cache["p"]
    (V, D), N = E.shape, len(ids)
    dE, dW = np.zeros((V, D)), np.zeros((D, D))
    for n in range(N):
        dlogits = [(p[n, v] - (1.0 if v == targets[n] else 0.0)) / N for v in range(V)]
        dh = [sum(dlogits[v] * E[v, d] for v in range(V)) for d in range(D)]
        for v in range(V):  # the projection reads every row of E
            for d in range(D):
                dE[v, d] += dlogits[v] * h[n, d]
        dz = [dh[j] * (1.0 - h[n, j] ** 2) for j in range(D)]
        for i in range(D):
            for j in range(D):
                dW[i, j] += x[n, i] * dz[j]
        for i in range(D):  # the lookup read row ids[n]
            dE[ids[n], i] += sum(dz[j] * W[i, j] for j in range(D))
    return dE, dW


def tied_lm_train(E, W, ids, targets, lr, steps):
    E, W = np.array(E, dtype=float), np.array(W, dtype=float)
    losses = []
    for _ in range(steps):
        loss, cache = tied_lm_forward(E, W, ids, targets)
        dE, dW = tied_lm_backward(E, W, cache, ids, targets)
        E -= lr * dE
        W -= lr * dW
        losses.append(loss)
    return E, E, W, np.array(losses)
