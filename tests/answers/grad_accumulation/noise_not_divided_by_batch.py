# Trap noise-not-divided-by-batch: the noise of one drawn row given for the minibatch's.
def minibatch_noise(params, x, y, B):
    rows = zip(*(mlp_grads(params, x[i:i + 1], y[i:i + 1]) for i in range(x.shape[0])))
    return tuple(np.var(np.stack(g), axis=0) for g in rows)
