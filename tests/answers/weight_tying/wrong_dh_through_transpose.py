# expect: trap=output-transposed
# The projection's gradient is right, but dh is taken through E.T instead of E: dh =
# dlogits @ E.T, which fits only when V = D, and sends the wrong gradient into dW and the lookup.
def tied_lm_backward(E, W, cache, ids, targets):
    x, h, p = cache["x"], cache["h"], cache["p"]
    N = len(ids)
    dlogits = p.copy()
    dlogits[np.arange(N), targets] -= 1.0
    dlogits /= N
    dE = dlogits.T @ h
    dz = (dlogits @ E.T) * (1.0 - h ** 2)
    np.add.at(dE, ids, dz @ W.T)
    return dE, x.T @ dz
