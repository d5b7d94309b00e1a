# Trap relu-mask-at-zero: the ReLU's mask taken as z >= 0 (issue 24, class 2: found only by a
# pre-activation exactly 0; every other input keeps |z| >= 0.02 away from the kink).
# expect: trap=relu-mask-at-zero
def mlp_grads(params, x, y):
    W1, b1, W2, b2 = params
    z = x @ W1 + b1
    h = np.maximum(z, 0.0)
    dout = (h @ W2 + b2 - y) / x.shape[0]
    dz = (dout @ W2.T) * (z >= 0)
    return x.T @ dz, dz.sum(axis=0), h.T @ dout, dout.sum(axis=0)
