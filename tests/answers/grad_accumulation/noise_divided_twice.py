# Trap noise-divided-twice: the mean's 1/B squared, and the draws' variances never added.
def minibatch_noise(params, x, y, B):
    rows = zip(*(mlp_grads(params, x[i:i + 1], y[i:i + 1]) for i in range(x.shape[0])))
    return tuple(np.var(np.stack(g), axis=0) / B ** 2 for g in rows)
