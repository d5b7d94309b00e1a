# Trap no-bias-correction: the step uses m and v as they are, without 1 - beta ** t.
def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    if decay:
        p = p * (1 - lr * weight_decay)
    return p - lr * m / (np.sqrt(v) + eps), m, v
