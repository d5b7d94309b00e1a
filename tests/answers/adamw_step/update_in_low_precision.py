# Trap update-in-low-precision: the step is applied to the float16 weights, and the master
# copy is refreshed from them, so steps below float16's spacing vanish.
def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    g = grad16.astype(np.float32)
    if not np.all(np.isfinite(g)):
        return master.copy(), master.astype(np.float16), m.copy(), v.copy(), t
    t = t + 1
    w16 = master.astype(np.float16)
    new_w, m, v = adamw_step(w16.astype(np.float32), g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay)
    w16 = new_w.astype(np.float16)  # the step lands in float16
    return w16.astype(np.float32), w16, m.astype(np.float32), v.astype(np.float32), t
