# Two mistakes at once (issue 24, class 3): the loss summed over the batch instead of averaged,
# and an epsilon inside the log instead of a max shift. Each is named where it shows: the
# factor N on moderate logits, the epsilon on huge ones (once the factor N is set aside).
# expect: trap=batch-not-averaged
# also named: overflow
def softmax_cross_entropy(logits, labels):
    n = logits.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(logits - logits.max(axis=1, keepdims=True) * 0)  # no shift: the mistake
        p = e / e.sum(axis=1, keepdims=True)
    p = np.nan_to_num(p)
    rows = np.arange(n)
    loss = -np.log(p[rows, labels] + 1e-12).sum()
    dlogits = p.copy()
    dlogits[rows, labels] -= 1.0
    return float(loss), dlogits
