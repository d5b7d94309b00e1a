# question: softmax_ce
# expect: trap=overflow
# The textbook formula with no max subtraction: exp(1e4) is inf.
import numpy as np



def softmax_cross_entropy(logits, labels):
    n = logits.shape[0]
    e = np.exp(logits)
    p = e / e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(n), labels]))
    dlogits = p.copy()
    dlogits[np.arange(n), labels] -= 1.0
    return float(loss), dlogits / n


def softmax_jacobian(z):
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
