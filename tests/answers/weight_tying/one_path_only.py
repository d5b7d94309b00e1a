# Trap one-path-only: dE is only the output projection's gradient, dlogits^T h; the lookup's
# share (dx scattered into the rows of the ids) is computed and then dropped.
def tied_lm_backward(E, W, cache, ids, targets):
    x, h, p = cache["x"], cache["h"], cache["p"]
    N = len(ids)
    dlogits = p.copy()
    dlogits[np.arange(N), targets] -= 1.0
    dlogits /= N
    dE = dlogits.T @ h
    dz = (dlogits @ E) * (1.0 - h ** 2)
    dW = x.T @ dz
    dx = dz @ W.T  # noqa: F841 (the embedding's gradient, never added to dE)
    return dE, dW
