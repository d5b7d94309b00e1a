# question: adamw_step
# expect: full
# A right answer written element by element, as a fused optimizer kernel computes it: one
# parameter at a time, every scalar in Python floats, then the dtypes put back.
import math

import numpy as np


def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    p_new, m_new, v_new = (np.empty(np.shape(p), dtype=np.asarray(a).dtype) for a in (p, m, v))
    shrink = 1 - lr * weight_decay if decay else 1.0
    for i in np.ndindex(np.shape(p)):
        mi = beta1 * float(m[i]) + (1 - beta1) * float(g[i])
        vi = beta2 * float(v[i]) + (1 - beta2) * float(g[i]) ** 2
        m_hat, v_hat = mi / (1 - beta1 ** t), vi / (1 - beta2 ** t)
        p_new[i] = float(p[i]) * shrink - lr * m_hat / (math.sqrt(v_hat) + eps)
        m_new[i], v_new[i] = mi, vi
    return p_new, m_new, v_new


def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    for value in grad16.flat:
        if not math.isfinite(float(value)):
            return master.copy(), master.astype(np.float16), m.copy(), v.copy(), t
    p, m, v = adamw_step(master, grad16.astype(np.float32), m, v, t + 1, lr, beta1, beta2, eps,
                         weight_decay, decay)
    return p, p.astype(np.float16), m, v, t + 1


def training_flops(n_params, n_tokens):
    flops_per_token = 2 * n_params + 4 * n_params  # forward, then backward (input and weight grads)
    return float(flops_per_token * n_tokens)


def bytes_per_param(zero_stage, n_gpus):
    total = 0.0
    for stage_that_shards, size in ((3, 2.0), (2, 2.0), (1, 12.0)):
        total += size / n_gpus if zero_stage >= stage_that_shards else size
    return total
