# Issue 24, class 5: the right formula with the row max subtracted, computed in float32.
# It is not an overflow (the max is subtracted) and no other trap: the dtype is the mistake.
# expect: unnamed
# says: float32 where the contract wants float64
def softmax_cross_entropy(logits, labels):
    z = logits.astype(np.float32)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    n = z.shape[0]
    loss = -logp[np.arange(n), labels].mean()
    dlogits = np.exp(logp)
    dlogits[np.arange(n), labels] -= 1
    return float(loss), dlogits / np.float32(n)
