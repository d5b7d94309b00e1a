# Trap missing-onehot: dlogits is the softmax alone (over N).
_ce = softmax_cross_entropy


def softmax_cross_entropy(logits, labels):
    loss, dlogits = _ce(logits, labels)
    dlogits = dlogits.copy()
    dlogits[np.arange(len(labels)), labels] += 1.0 / logits.shape[0]
    return loss, dlogits
