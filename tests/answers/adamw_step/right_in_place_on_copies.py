# question: adamw_step
# expect: full
# A right answer in the style of PyTorch's single-tensor AdamW (torch/optim/adamw.py): copies
# of the state updated with in-place ops (mul_, addcmul_), the step as addcdiv.
import math

import numpy as np


def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    p, m, v = p.copy(), m.copy(), v.copy()
    if decay:
        p *= 1 - lr * weight_decay
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * g * g
    bias_correction1 = 1 - beta1 ** t
    bias_correction2 = 1 - beta2 ** t
    step_size = lr / bias_correction1
    denom = np.sqrt(v) / math.sqrt(bias_correction2) + eps
    p -= step_size * m / denom
    return p, m, v


def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    if np.isinf(grad16).any() or np.isnan(grad16).any():
        return master.copy(), master.astype(np.float16), m.copy(), v.copy(), t
    p, m2, v2 = adamw_step(master.astype(np.float64), grad16.astype(np.float64), m.astype(np.float64),
                           v.astype(np.float64), t + 1, lr, beta1, beta2, eps, weight_decay, decay)
    p32 = p.astype(np.float32)
    return p32, p32.astype(np.float16), m2.astype(np.float32), v2.astype(np.float32), t + 1


def training_flops(n_params, n_tokens):
    forward = 2 * n_params * n_tokens
    return float(forward + 2 * forward)


def bytes_per_param(zero_stage, n_gpus):
    parts = {"weights": 2, "grads": 2, "optimizer": 4 + 4 + 4}
    sharded = ["optimizer", "grads", "weights"][:zero_stage]
    return float(sum(b / n_gpus if k in sharded else b for k, b in parts.items()))
