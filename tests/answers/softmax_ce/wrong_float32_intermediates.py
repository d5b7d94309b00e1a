# question: softmax_ce
# expect: unnamed
# says: about float32's rounding
# float64 out, but the exponentials and the log-sum-exp computed in float32: the rows of dlogits
# cancel only to float32's rounding, and the feedback says so.
import numpy as np
def softmax_jacobian(z):
    p = np.exp((z - z.max()).astype(np.float32)); p = (p / p.sum()).astype(np.float64)
    return np.diag(p) - np.outer(p, p)
def softmax_cross_entropy(logits, labels):
    N = len(labels)
    s = (logits - logits.max(axis=1, keepdims=True)).astype(np.float32)
    lse = np.log(np.exp(s).sum(axis=1))
    loss = float(np.mean(lse - s[np.arange(N), labels]))
    d = np.exp(s - lse[:, None]).astype(np.float64)
    d[np.arange(N), labels] -= 1
    return loss, d / N
