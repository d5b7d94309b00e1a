# expect: trap=one-path-only
# The other half of the same mistake: dE is only the lookup's scatter-add, as for an untied
# embedding table; the output projection's dlogits^T h never reaches E.
def tied_lm_backward(E, W, cache, ids, targets):
    x, h, p = cache["x"], cache["h"], cache["p"]
    N = len(ids)
    dlogits = p.copy()
    dlogits[np.arange(N), targets] -= 1.0
    dlogits /= N
    dz = (dlogits @ E) * (1.0 - h ** 2)
    dE = np.zeros_like(E)
    np.add.at(dE, ids, dz @ W.T)
    return dE, x.T @ dz
