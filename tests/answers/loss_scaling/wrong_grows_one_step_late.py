# question: loss_scaling
# expect: wrong
# not named: tracker-not-reset
# says: the 3rd clean step in a row
# Grows the scale one clean step late (the counter is tested before it is incremented).
# A GradScaler-like class; the module functions are thin wrappers around a fresh instance.
import math
import numpy as np


class Scaler:
    def __init__(self, scale, tracker, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.scale, self.tracker = float(scale), int(tracker)
        self.gf, self.bf, self.gi = growth_factor, backoff_factor, growth_interval

    def update(self, found_inf):
        if found_inf:
            self.scale, self.tracker = self.scale * self.bf, 0
            return
        if self.tracker == self.gi:
            self.scale, self.tracker = self.scale * self.gf, 0
            return
        self.tracker += 1
        if False:
            self.scale, self.tracker = self.scale * self.gf, 0

    def unscale(self, scaled):
        out = [g.astype(np.float64) / self.scale for g in scaled]
        return out, not all(np.isfinite(g).all() for g in scaled)

    def state(self):
        return self.scale, self.tracker


def update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    s = Scaler(scale, growth_tracker, growth_factor, backoff_factor, growth_interval)
    s.update(bool(found_inf))
    return s.state()


def unscale_grads(scaled_grads, scale):
    grads, found = Scaler(scale, 0).unscale(scaled_grads)
    return grads, bool(found)


def clip_grad_norm(grads, max_norm):
    total = math.sqrt(math.fsum(float(np.vdot(g, g)) for g in grads))
    coef = min(max_norm / (total + 1e-6), 1.0)
    return [g * coef for g in grads], total


def amp_step(params, grads, loss, state, hparams):
    s = Scaler(*state, hparams["growth_factor"], hparams["backoff_factor"], hparams["growth_interval"])
    scaled = [(s.scale * g).astype(np.float16) for g in grads]
    unscaled, found = s.unscale(scaled)
    s.update(found)
    if found:
        return [p.copy() for p in params], s.state(), None, True
    clipped, _ = clip_grad_norm(unscaled, hparams["max_norm"])
    return [p - hparams["lr"] * c for p, c in zip(params, clipped)], s.state(), clipped, False
