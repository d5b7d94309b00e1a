# expect: unnamed
# says: tied at the k-th place
# idx from a stable sort of the reversed columns: equal logits rank the higher expert index
# first. Right everywhere but at a tie.
def router_forward(x, Wr, k, aux_coef):
    logits = x @ Wr
    E = logits.shape[1]
    rev = np.argsort(-logits[:, ::-1], axis=1, kind="stable")[:, :k]
    idx = (E - 1 - rev).astype(np.int64)
    top = np.take_along_axis(logits, idx, axis=1)
    e = np.exp(top - top[:, :1])
    p = np.exp(logits - top[:, :1])
    p /= p.sum(axis=1, keepdims=True)
    f = np.bincount(idx.ravel(), minlength=E) / idx.size
    return e / e.sum(axis=1, keepdims=True), idx, float(aux_coef * E * np.sum(f * p.mean(axis=0)))
