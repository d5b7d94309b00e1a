# question: adamw_step
# expect: unnamed
# says: as the contract says
# The float32 step with every hyperparameter rounded to float32 first, as Apex's FusedAdam takes
# its betas: 1 - beta2 is then 1.3e-5 off in relative terms, which shows in v where the gradient
# is float16's largest, 65504. The contract forms such constants in float64, as torch.optim.AdamW
# does (docs/questions/adamw_step.md), so it loses the points, named as no trap and no dtype.
import math
import numpy as np

def bytes_per_param(zero_stage, n_gpus):
    table = {0: (1, 1, 1), 1: (1, 1, n_gpus), 2: (1, n_gpus, n_gpus), 3: (n_gpus, n_gpus, n_gpus)}
    w, g, o = table[zero_stage]
    return 2 / w + 2 / g + 12 / o

def training_flops(n_params, n_tokens):
    return float(2 * n_params * n_tokens + 4 * n_params * n_tokens)   # forward + backward

def adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    m_new = np.empty_like(m); v_new = np.empty_like(v); p_new = p.copy()
    np.multiply(m, beta1, out=m_new); m_new += (1 - beta1) * g
    np.multiply(v, beta2, out=v_new); v_new += (1 - beta2) * np.square(g)
    if decay:
        p_new *= 1 - lr * weight_decay
    bc1 = 1 - beta1 ** t
    bc2 = 1 - beta2 ** t
    denom = np.sqrt(v_new / bc2)
    denom += eps
    p_new -= (lr / bc1) * m_new / denom
    return p_new, m_new, v_new

def mixed_precision_step(master, grad16, m, v, t, lr, beta1, beta2, eps, weight_decay, decay):
    if np.isfinite(grad16).all():
        f32 = np.float32
        master, m, v = adamw_step(master, grad16.astype(f32), m, v, t + 1, f32(lr), f32(beta1),
                                  f32(beta2), f32(eps), f32(weight_decay), decay)
        master, m, v = master.astype(f32), m.astype(f32), v.astype(f32)
        t += 1
    else:
        master, m, v = master.copy(), m.copy(), v.copy()
    return master, master.astype(np.float16), m, v, t
