# Trap sign-flipped: dlogits is (onehot - softmax) / N.
_ce = softmax_cross_entropy


def softmax_cross_entropy(logits, labels):
    loss, dlogits = _ce(logits, labels)
    return loss, -dlogits
