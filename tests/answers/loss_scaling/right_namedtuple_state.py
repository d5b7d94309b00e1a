# question: loss_scaling
# expect: full
# Functional with a NamedTuple for the scaler state and np.linalg.norm over one flat vector.
from typing import NamedTuple
import numpy as np


class State(NamedTuple):
    scale: float
    tracker: int


def update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    st = State(float(scale), int(growth_tracker))
    if found_inf:
        st = State(st.scale * backoff_factor, 0)
    elif st.tracker + 1 < growth_interval:
        st = st._replace(tracker=st.tracker + 1)
    else:
        st = State(st.scale * growth_factor, 0)
    return tuple(st)


def unscale_grads(scaled_grads, scale):
    found = any(not np.all(np.isfinite(g)) for g in scaled_grads)
    return [np.asarray(g, dtype=np.float64) * (1.0 / scale) if False else
            np.asarray(g, dtype=np.float64) / scale for g in scaled_grads], found


def clip_grad_norm(grads, max_norm):
    flat = np.concatenate([np.ravel(g) for g in grads]) if grads else np.zeros(0)
    total = float(np.linalg.norm(flat))
    c = np.clip(max_norm / (total + 1e-6), None, 1.0)
    return [g * float(c) for g in grads], total


def amp_step(params, grads, loss, state, hparams):
    h = hparams
    scaled = [np.asarray(state[0] * g).astype(np.float16) for g in grads]
    unscaled, found = unscale_grads(scaled, state[0])
    new_state = update_scale(*state, found, h["growth_factor"], h["backoff_factor"], h["growth_interval"])
    if found:
        return [np.copy(p) for p in params], new_state, None, True
    clipped, _ = clip_grad_norm(unscaled, h["max_norm"])
    return [p - h["lr"] * g for p, g in zip(params, clipped)], new_state, clipped, False
