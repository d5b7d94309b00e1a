# question: softmax_ce
# expect: trap=batch-not-averaged
# The loss is the sum of the row losses (not their mean); the gradient is right.
import numpy as np



def softmax_cross_entropy(logits, labels):
    n = logits.shape[0]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_p[np.arange(n), labels].sum()
    dlogits = np.exp(log_p)
    dlogits[np.arange(n), labels] -= 1.0
    return float(loss), dlogits / n


def softmax_jacobian(z):
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
