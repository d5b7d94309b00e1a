# expect: full
# The embedding written as a one-hot matrix product, both ways: emb = onehot @ E, so
# dE's embedding part is onehot.T @ demb, which adds repeated ids by construction.
def ninja_backward(params, cache, idx, targets, keep_bits, p_drop):
    E, W1, gamma, W2 = params["E"], params["W1"], params["gamma"], params["W2"]
    B, T = idx.shape
    V = E.shape[0]
    onehot_targets = np.eye(V)[targets]  # B, V
    logits = cache["logits"]
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = probs / probs.sum(axis=1, keepdims=True)
    dlogits = (probs - onehot_targets) / B
    dz = dlogits @ E
    dW2, db2, dhdrop = cache["hdrop"].T @ dz, dz.sum(axis=0), dz @ W2.T
    keep = np.unpackbits(keep_bits, count=cache["h"].size).reshape(cache["h"].shape)
    dh = np.where(keep == 1, dhdrop / (1.0 - p_drop), 0.0)
    dhln = dh * (1.0 - np.tanh(cache["hln"]) ** 2)
    xhat, rstd = cache["xhat"], cache["rstd"]
    H = xhat.shape[1]
    g = dhln * gamma
    dhpre = rstd[:, None] / H * (H * g - g.sum(axis=1, keepdims=True)
                                 - xhat * (g * xhat).sum(axis=1, keepdims=True))
    dW1, db1, dx = cache["x"].T @ dhpre, dhpre.sum(axis=0), dhpre @ W1.T
    demb = dx.reshape(B, T, -1)
    onehot_ids = np.eye(V)[idx.ravel()]  # B*T, V
    dE = dlogits.T @ cache["z"] + onehot_ids.T @ demb.reshape(B * T, -1)
    return {"dlogits": dlogits, "dz": dz, "dW2": dW2, "db2": db2, "dhdrop": dhdrop, "dh": dh,
            "dhln": dhln, "dgamma": (dhln * xhat).sum(axis=0), "dbeta": dhln.sum(axis=0),
            "dhpre": dhpre, "dW1": dW1, "db1": db1, "dx": dx, "demb": demb, "dE": dE}
