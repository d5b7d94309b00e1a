# expect: unnamed
# not named: aux-detached
# f_i as the number of tokens routed to i over N (HF Mixtral's tokens_per_expert summed over
# the k slots): f sums to k, so the loss and its gradient are k times the contract's.
_right_backward = router_backward


def router_forward(x, Wr, k, aux_coef):
    logits = x @ Wr
    N, E = logits.shape
    idx = np.argsort(-logits, axis=1, kind="stable")[:, :k].astype(np.int64)
    top = np.take_along_axis(logits, idx, axis=1)
    e = np.exp(top - top[:, :1])
    p = np.exp(logits - top[:, :1])
    p /= p.sum(axis=1, keepdims=True)
    f = np.bincount(idx.ravel(), minlength=E) / N
    return e / e.sum(axis=1, keepdims=True), idx, float(aux_coef * E * np.sum(f * p.mean(axis=0)))


def router_backward(dgates, x, Wr, idx, aux_coef):
    return _right_backward(dgates, x, Wr, idx, aux_coef * idx.shape[1])
