# question: layernorm_backward
# Issue 24, class 5: a softmax answer graded as layernorm_backward (`-q` on the wrong file).
# The report says which question the file answers, instead of nine "not defined" lines.
# expect: error
# says: looks like an answer to 'softmax_ce'
import numpy as np


def softmax_cross_entropy(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    n = logits.shape[0]
    dlogits = np.exp(logp)
    dlogits[np.arange(n), labels] -= 1
    return float(-logp[np.arange(n), labels].mean()), dlogits / n


def softmax_jacobian(z):
    p = np.exp(z - z.max())
    p /= p.sum()
    return np.diag(p) - np.outer(p, p)
