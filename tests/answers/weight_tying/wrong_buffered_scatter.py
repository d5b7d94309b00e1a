# expect: wrong
# says: does not match the finite-difference gradient
# Both shares are added, but the lookup's with numpy's buffered dE[ids] += dx: an id at
# several positions keeps one position's gradient (question 25's mistake, not one of this
# question's: the repeated-ids check fails and names none of them).
def tied_lm_backward(E, W, cache, ids, targets):
    x, h, p = cache["x"], cache["h"], cache["p"]
    N = len(ids)
    dlogits = p.copy()
    dlogits[np.arange(N), targets] -= 1.0
    dlogits /= N
    dE = dlogits.T @ h
    dz = (dlogits @ E) * (1.0 - h ** 2)
    dE[ids] += dz @ W.T
    return dE, x.T @ dz
