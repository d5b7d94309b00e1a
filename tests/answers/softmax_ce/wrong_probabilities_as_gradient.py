# question: softmax_ce
# expect: trap=missing-onehot
# dlogits is the softmax divided by N: the one-hot is never subtracted.
import numpy as np



def softmax_cross_entropy(logits, labels):
    n = logits.shape[0]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_p[np.arange(n), labels].mean()), np.exp(log_p) / n


def softmax_jacobian(z):
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
