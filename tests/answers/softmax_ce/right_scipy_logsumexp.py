# question: softmax_ce
# expect: full
# scipy's logsumexp and softmax, a one-hot from np.eye, the Jacobian as a closure over p.
import numpy as np
from scipy.special import logsumexp, softmax


def softmax_cross_entropy(logits, labels):
    n = logits.shape[0]
    lse = logsumexp(logits, axis=1)
    picked = logits[np.arange(n), labels]
    loss = np.mean(lse - picked)
    onehot = np.zeros_like(logits)
    np.put_along_axis(onehot, labels[:, None], 1.0, axis=1)
    return loss.item(), (softmax(logits, axis=1) - onehot) / n


def softmax_jacobian(z):
    p = softmax(z)
    outer = lambda a, b: a[:, None] * b[None, :]
    return np.diagflat(p) - outer(p, p)
