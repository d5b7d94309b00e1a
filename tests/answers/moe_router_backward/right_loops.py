# question: moe_router_backward
# expect: full
# A right answer with explicit loops over tokens and experts, as one derives it on paper: the
# k largest found one at a time, the gates' Jacobian written entry by entry.
import math

import numpy as np


def _top_k(row, k):
    chosen = []
    for _ in range(k):
        best = -1
        for e in range(len(row)):
            if e not in chosen and (best < 0 or row[e] > row[best]):
                best = e  # strict: a tie keeps the lower index
        chosen.append(best)
    return chosen


def _softmax(values):
    m = max(values)
    ex = [math.exp(v - m) for v in values]
    s = sum(ex)
    return [v / s for v in ex]


def router_forward(x, Wr, k, aux_coef):
    logits = x @ Wr
    N, E = logits.shape
    gates, idx = np.zeros((N, k)), np.zeros((N, k), dtype=np.int64)
    counts, P = [0] * E, [0.0] * E
    for n in range(N):
        chosen = _top_k(list(logits[n]), k)
        idx[n] = chosen
        gates[n] = _softmax([logits[n, e] for e in chosen])
        for e in chosen:
            counts[e] += 1
        for e, pe in enumerate(_softmax(list(logits[n]))):
            P[e] += pe / N
    aux = aux_coef * E * sum(counts[e] / (N * k) * P[e] for e in range(E))
    return gates, idx, aux


def router_backward(dgates, x, Wr, idx, aux_coef):
    logits = x @ Wr
    N, E = logits.shape
    k = idx.shape[1]
    counts = [0] * E
    for n in range(N):
        for j in range(k):
            counts[idx[n, j]] += 1
    dlogits = np.zeros((N, E))
    for n in range(N):
        g = _softmax([logits[n, e] for e in idx[n]])
        for i in range(k):  # d gates[n, j] / d logits[n, idx[n, i]] = g_j (delta_ij - g_i)
            dlogits[n, idx[n, i]] += sum(dgates[n, j] * g[j] * ((i == j) - g[i]) for j in range(k))
        p = _softmax(list(logits[n]))
        for i in range(E):  # d aux / d logits[n, i], through P only
            for e in range(E):
                dpe = p[e] * ((i == e) - p[i])
                dlogits[n, i] += aux_coef * E * counts[e] / (N * k) / N * dpe
    return dlogits @ Wr.T, x.T @ dlogits
