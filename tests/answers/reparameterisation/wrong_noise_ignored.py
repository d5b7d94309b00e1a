# expect: wrong
# The Gumbel noise is never added: a plain tempered softmax of the logits.
def gumbel_softmax_forward(logits, gumbel, tau):
    h = logits / tau
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
