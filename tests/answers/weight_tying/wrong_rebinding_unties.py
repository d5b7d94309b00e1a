# expect: trap=untied-copy
# The two uses start as one array, but the update rebinds one name (params["embedding"] =
# params["embedding"] - lr * dE): the projection's name still holds the old array, which never
# moves again, while the embedding's moves by the whole gradient.
def tied_lm_train(E, W, ids, targets, lr, steps):
    shared = E.copy()
    params = {"embedding": shared, "projection": shared, "W": W.copy()}
    losses = []
    for _ in range(steps):
        E_in, E_out, Wc = params["embedding"], params["projection"], params["W"]
        N = len(ids)
        x = E_in[ids]
        h = np.tanh(x @ Wc)
        logits = h @ E_out.T
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        losses.append(-np.mean(np.log(p[np.arange(N), targets])))
        dlogits = p.copy()
        dlogits[np.arange(N), targets] -= 1.0
        dlogits /= N
        dE = dlogits.T @ h
        dz = (dlogits @ E_out) * (1.0 - h ** 2)
        np.add.at(dE, ids, dz @ Wc.T)
        params["embedding"] = params["embedding"] - lr * dE  # a new array: the tie is gone
        params["W"] = Wc - lr * (x.T @ dz)
    return params["embedding"], params["projection"], params["W"], np.array(losses)
