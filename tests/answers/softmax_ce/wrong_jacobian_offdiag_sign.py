# question: softmax_ce
# expect: wrong
# not named: jacobian-diag-only
# The off-diagonal sign is wrong (+p_i p_j): not the diagonal-only trap.
import numpy as np
def softmax_jacobian(z):
    p = np.exp(z - z.max()); p /= p.sum()
    J = np.outer(p, p)
    J[np.diag_indices(len(p))] = p * (1 - p)
    return J
def softmax_cross_entropy(logits, labels):
    N = len(labels)
    s = logits - logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(s).sum(axis=1))
    loss = np.mean(lse - s[np.arange(N), labels])
    d = np.exp(s - lse[:, None])
    d[np.arange(N), labels] -= 1
    return float(loss), d / N
