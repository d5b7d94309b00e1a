# question: softmax_ce
# expect: full
# Vectorised with a log-sum-exp: the loss comes from the log-softmax, never from log(p).
import numpy as np


def softmax_cross_entropy(logits, labels):
    n = logits.shape[0]
    shifted = logits - logits.max(axis=1, keepdims=True)            # N, K
    log_z = np.log(np.exp(shifted).sum(axis=1, keepdims=True))       # N, 1
    log_p = shifted - log_z                                          # N, K
    loss = -log_p[np.arange(n), labels].mean()
    dlogits = np.exp(log_p)
    dlogits[np.arange(n), labels] -= 1.0
    return float(loss), dlogits / n


def softmax_jacobian(z):
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
