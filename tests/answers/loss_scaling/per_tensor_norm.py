# question: loss_scaling
# Trap per-tensor-norm: each tensor is clipped by its own norm instead of one norm over all of them.
# A complete answer: every function is right but this one mistake.
import numpy as np


def update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    if found_inf:
        return scale * backoff_factor, 0
    if growth_tracker + 1 == growth_interval:
        return scale * growth_factor, 0
    return scale, growth_tracker + 1


def unscale_grads(scaled_grads, scale):
    grads = [g.astype(np.float64) / scale for g in scaled_grads]
    return grads, not all(np.isfinite(g).all() for g in grads)


def clip_grad_norm(grads, max_norm):
    clipped = []
    for g in grads:
        norm = float(np.sqrt(np.sum(g * g)))
        clipped.append(g * min(max_norm / (norm + 1e-6), 1.0))
    return clipped, float(np.sqrt(sum(np.sum(g * g) for g in grads)))


def amp_step(params, grads, loss, state, hparams):
    scale, tracker = state
    with np.errstate(over="ignore"):
        scaled = [(scale * g).astype(np.float16) for g in grads]
    unscaled, found_inf = unscale_grads(scaled, scale)
    clipped = None
    if not found_inf:
        clipped, _ = clip_grad_norm(unscaled, hparams["max_norm"])
    new_params = [p.copy() for p in params] if found_inf else [p - hparams["lr"] * g for p, g in zip(params, clipped)]
    new_state = update_scale(scale, tracker, found_inf, hparams["growth_factor"],
                             hparams["backoff_factor"], hparams["growth_interval"])
    return new_params, new_state, clipped, found_inf
