# question: softmax_ce
# expect: trap=jacobian-diag-only
# The Jacobian is diag(p): only the i = j case of the quotient rule, and that one half done.
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
    return np.diag(e / e.sum())
