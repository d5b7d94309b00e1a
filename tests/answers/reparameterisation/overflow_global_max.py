# The max subtracted over the whole array instead of per row (issue 24, class 3): one row's
# huge logits push every other row's exponents to 0, so those rows are 0 / 0. A probe with
# several rows names it overflow.
# expect: trap=overflow
def gumbel_softmax_forward(logits, gumbel, tau):
    h = (logits + gumbel) / tau
    e = np.exp(h - h.max())
    return e / e.sum(axis=1, keepdims=True)
