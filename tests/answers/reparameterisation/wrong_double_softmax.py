# expect: trap=temperature-after-softmax
# The temperature applied to the probabilities, then renormalised with a second softmax.
def gumbel_softmax_forward(logits, gumbel, tau):
    h = logits + gumbel
    p = np.exp(h - h.max(axis=1, keepdims=True))
    p = p / p.sum(axis=1, keepdims=True)
    q = np.exp(p / tau - (p / tau).max(axis=1, keepdims=True))
    return q / q.sum(axis=1, keepdims=True)
