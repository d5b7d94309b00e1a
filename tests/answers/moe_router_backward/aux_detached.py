# Trap aux-detached: the load-balancing loss's value is returned by the forward, but the
# backward leaves its gradient out (as if it were only logged).
def router_backward(dgates, x, Wr, idx, aux_coef):
    logits = x @ Wr
    N, E = logits.shape
    top = np.take_along_axis(logits, idx, axis=1)
    e = np.exp(top - top.max(axis=1, keepdims=True))
    gates = e / e.sum(axis=1, keepdims=True)
    dlogits = np.zeros((N, E))
    np.put_along_axis(dlogits, idx, gates * (dgates - np.sum(gates * dgates, axis=1, keepdims=True)), axis=1)
    return dlogits @ Wr.T, x.T @ dlogits
