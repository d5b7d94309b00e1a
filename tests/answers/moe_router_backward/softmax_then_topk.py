# Trap softmax-then-topk: a softmax over all E experts, then the k largest probabilities as the
# gates, never renormalised; the backward is that function's, so it reaches every expert.
def router_forward(x, Wr, k, aux_coef):
    logits = x @ Wr
    N, E = logits.shape
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    idx = np.argsort(-logits, axis=1, kind="stable")[:, :k].astype(np.int64)
    gates = np.take_along_axis(p, idx, axis=1)
    f = np.bincount(idx.ravel(), minlength=E) / (N * k)
    return gates, idx, float(aux_coef * E * np.sum(f * p.mean(axis=0)))


def router_backward(dgates, x, Wr, idx, aux_coef):
    logits = x @ Wr
    N, E = logits.shape
    k = idx.shape[1]
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dp = np.zeros((N, E))
    np.put_along_axis(dp, idx, dgates, axis=1)
    dp += aux_coef * E * np.bincount(idx.ravel(), minlength=E) / (N * k) / N
    dlogits = p * (dp - np.sum(p * dp, axis=1, keepdims=True))
    return dlogits @ Wr.T, x.T @ dlogits
