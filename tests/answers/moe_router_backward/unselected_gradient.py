# Trap unselected-gradient: the gates written as the top k of a softmax over all experts,
# divided by their sum, and differentiated with that sum held constant: the softmax over all
# E experts is differentiated, and the gates' gradient leaks to the unselected experts.
def router_backward(dgates, x, Wr, idx, aux_coef):
    logits = x @ Wr
    N, E = logits.shape
    k = idx.shape[1]
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    S = np.take_along_axis(p, idx, axis=1).sum(axis=1, keepdims=True)  # "a constant"
    dp = np.zeros((N, E))
    np.put_along_axis(dp, idx, dgates / S, axis=1)
    dlogits = p * (dp - np.sum(p * dp, axis=1, keepdims=True))
    a = aux_coef * E * np.bincount(idx.ravel(), minlength=E) / (N * k) / N
    dlogits += p * (a - np.sum(p * a, axis=1, keepdims=True))
    return dlogits @ Wr.T, x.T @ dlogits
