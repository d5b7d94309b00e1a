# Trap skip-not-clean: on an overflow the weights are left alone, but the step is counted and
# the moments are updated with the infinite gradient anyway.
def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    g = grad16.astype(np.float32)
    t = t + 1
    new_master, new_m, new_v = adamw_step(master, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay)
    if not np.all(np.isfinite(g)):
        new_master = master.copy()
    new_master, new_m, new_v = (a.astype(np.float32) for a in (new_master, new_m, new_v))
    return new_master, new_master.astype(np.float16), new_m, new_v, t
