# Trap l2-not-decoupled: Adam with an L2 term, the decay added to the gradient.
def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    if decay:
        g = g + weight_decay * p
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
