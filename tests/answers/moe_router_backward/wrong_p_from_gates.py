# expect: wrong
# P_i taken as the mean of the renormalised gates (zero where an expert was not selected)
# instead of the softmax over all experts: the loss's value is wrong, and so is its gradient.
def router_forward(x, Wr, k, aux_coef):
    logits = x @ Wr
    N, E = logits.shape
    idx = np.argsort(-logits, axis=1, kind="stable")[:, :k].astype(np.int64)
    top = np.take_along_axis(logits, idx, axis=1)
    e = np.exp(top - top[:, :1])
    gates = e / e.sum(axis=1, keepdims=True)
    dense = np.zeros((N, E))
    np.put_along_axis(dense, idx, gates, axis=1)
    f = np.bincount(idx.ravel(), minlength=E) / (N * k)
    return gates, idx, float(aux_coef * E * np.sum(f * dense.mean(axis=0)))
