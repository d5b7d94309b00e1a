# Trap bessel-corrected: the rows' variance over N - 1, as torch.var and pandas compute it.
def minibatch_noise(params, x, y, B):
    rows = zip(*(mlp_grads(params, x[i:i + 1], y[i:i + 1]) for i in range(x.shape[0])))
    return tuple(np.var(np.stack(g), axis=0, ddof=1) / B for g in rows)
