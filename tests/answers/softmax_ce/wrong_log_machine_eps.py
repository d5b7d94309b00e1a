# question: softmax_ce
# expect: trap=overflow
# Shifted softmax, but the loss is -log(p + machine epsilon): right for moderate logits,
# wrong where a probability underflows to 0 (it reports -log(2.2e-16) = 36).
import numpy as np



def softmax_cross_entropy(logits, labels):
    n = logits.shape[0]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(n), labels] + np.finfo(np.float64).eps))
    dlogits = p.copy()
    dlogits[np.arange(n), labels] -= 1.0
    return float(loss), dlogits / n


def softmax_jacobian(z):
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
