# question: softmax_ce
# expect: full
# Row by row with Python loops and the math module, the way it is derived on paper.
import math

import numpy as np


def _softmax(row):
    top = max(row)
    e = [math.exp(v - top) for v in row]
    total = sum(e)
    return [v / total for v in e], top + math.log(total)


def softmax_cross_entropy(logits, labels):
    n, k = logits.shape
    loss = 0.0
    dlogits = np.zeros((n, k))
    for i in range(n):
        p, log_total = _softmax(list(logits[i]))
        loss += log_total - logits[i, labels[i]]          # -log p[label] = logsumexp - z[label]
        for j in range(k):
            dlogits[i, j] = (p[j] - (1.0 if j == labels[i] else 0.0)) / n
    return loss / n, dlogits


def softmax_jacobian(z):
    p, _ = _softmax(list(z))
    k = len(p)
    J = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            J[i, j] = p[i] * ((1.0 if i == j else 0.0) - p[j])
    return J
