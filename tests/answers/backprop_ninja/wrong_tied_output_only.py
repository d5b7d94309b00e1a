# expect: trap=tied-not-summed
# dE keeps only the output layer's gradient: the embedding's scatter is never added.
def ninja_backward(params, cache, idx, targets, keep_bits, p_drop):
    E, W1, gamma, W2 = params["E"], params["W1"], params["gamma"], params["W2"]
    B, T = idx.shape
    logits, z, h, xhat, rstd = (cache[k] for k in ("logits", "z", "h", "xhat", "rstd"))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))  # B, V
    probs /= probs.sum(axis=1, keepdims=True)
    dlogits = probs.copy()  # B, V
    dlogits[np.arange(B), targets] -= 1.0  # softmax - onehot
    dlogits /= B  # the loss is the batch mean
    dz = dlogits @ E  # B, C
    dE_output = dlogits.T @ z  # V, C; the tied matrix's first gradient
    dW2 = cache["hdrop"].T @ dz  # H, C
    db2 = dz.sum(axis=0)  # C
    dhdrop = dz @ W2.T  # B, H
    keep = np.unpackbits(keep_bits, count=h.size).reshape(h.shape)  # B, H
    dh = dhdrop * keep / (1.0 - p_drop)  # B, H; the forward's mask and scale
    dhln = dh * (1.0 - h * h)  # B, H; tanh' from tanh's output
    dgamma = (dhln * xhat).sum(axis=0)  # H
    dbeta = dhln.sum(axis=0)  # H
    g = dhln * gamma  # B, H
    dhpre = rstd[:, None] * (g - g.mean(axis=1, keepdims=True)
                             - xhat * (g * xhat).mean(axis=1, keepdims=True))  # B, H
    dW1 = cache["x"].T @ dhpre  # T*C, H
    db1 = dhpre.sum(axis=0)  # H
    dx = dhpre @ W1.T  # B, T*C
    demb = dx.reshape(B, T, -1)  # B, T, C
    dE = dE_output.copy()  # V, C
    return {"dlogits": dlogits, "dz": dz, "dW2": dW2, "db2": db2, "dhdrop": dhdrop, "dh": dh,
            "dhln": dhln, "dgamma": dgamma, "dbeta": dbeta, "dhpre": dhpre, "dW1": dW1,
            "db1": db1, "dx": dx, "demb": demb, "dE": dE}
