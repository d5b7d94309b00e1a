# question: softmax_ce
# expect: trap=overflow
# Keras style: probabilities clipped to [1e-7, 1 - 1e-7] before the log. Finite, but wrong
# for large logits (and a clipped probability changes the loss).
import numpy as np



def softmax_cross_entropy(logits, labels):
    n = logits.shape[0]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(np.clip(p[np.arange(n), labels], 1e-7, 1 - 1e-7)))
    dlogits = p.copy()
    dlogits[np.arange(n), labels] -= 1.0
    return float(loss), dlogits / n


def softmax_jacobian(z):
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
