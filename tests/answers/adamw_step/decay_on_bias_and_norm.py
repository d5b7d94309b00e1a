# Trap decay-on-bias-and-norm: the decay flag is ignored, every tensor is decayed.
_right_step = adamw_step


def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    return _right_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, True)
