# Trap output-transposed: the projection is thought of as U = E.T (D, V), and its gradient
# h^T dlogits (D, V) is added to E's without transposing it back. It has E's shape only when
# V = D (there its values are wrong); otherwise np.add.at fails on the shapes.
def tied_lm_backward(E, W, cache, ids, targets):
    x, h, p = cache["x"], cache["h"], cache["p"]
    N = len(ids)
    dlogits = p.copy()
    dlogits[np.arange(N), targets] -= 1.0
    dlogits /= N
    dE = h.T @ dlogits  # D, V: the gradient of E.T, not of E
    dz = (dlogits @ E) * (1.0 - h ** 2)
    np.add.at(dE, ids, dz @ W.T)
    return dE, x.T @ dz
