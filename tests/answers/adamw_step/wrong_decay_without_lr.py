# expect: wrong
# The decay not scaled by the learning rate (p * (1 - weight_decay)): the AdamW paper's
# schedule multiplier taken as 1, not PyTorch's lr * weight_decay.
def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    if decay:
        p = p * (1 - weight_decay)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
