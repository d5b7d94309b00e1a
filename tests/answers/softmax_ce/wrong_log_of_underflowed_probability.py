# question: softmax_ce
# expect: trap=overflow
# says: `loss` is inf
# The max is subtracted, but the loss is the log of a probability that underflowed to 0 for
# logits of 1e4: the feedback says which output is not finite, and names this cause.
import numpy as np
def softmax_jacobian(z):
    p = np.exp(z - z.max()); p /= p.sum()
    return np.diag(p) - np.outer(p, p)

def softmax_cross_entropy(logits, labels):
    N = len(labels)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(N), labels]))
    d = p.copy()
    d[np.arange(N), labels] -= 1
    return float(loss), d / N
