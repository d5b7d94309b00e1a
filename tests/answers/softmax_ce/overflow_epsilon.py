# Trap overflow, hidden by an epsilon: the softmax is shifted, but the loss is
# log(p + 1e-12), finite and wrong when the true class's probability underflows to 0.
def softmax_cross_entropy(logits, labels):
    n = logits.shape[0]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    rows = np.arange(n)
    loss = -np.log(p[rows, labels] + 1e-12).mean()
    dlogits = p.copy()
    dlogits[rows, labels] -= 1.0
    return float(loss), dlogits / n
