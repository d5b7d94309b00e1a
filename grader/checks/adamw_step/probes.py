"""Inputs for the adamw_step checks.

Shapes: p, g, m, v (4, 5) unless a check says otherwise. Moments after t steps are drawn as
a running optimizer would hold them (v positive and of the order of g^2); gradients for the
eps check are tiny (1e-6 to 1e-4), where where eps goes decides the step.
"""
from __future__ import annotations

import numpy as np

BETAS = (0.9, 0.999)
EPS = 1e-8
SHAPE = (4, 5)


def state(rng, t, shape=SHAPE, scale=0.1):
    """(p, g, m, v) for a step numbered t (zeros for the moments when t = 1)."""
    p = rng.standard_normal(shape)
    g = scale * rng.standard_normal(shape)
    if t == 1:
        return p, g, np.zeros(shape), np.zeros(shape)
    m = 0.5 * scale * rng.standard_normal(shape)
    v = (scale * rng.standard_normal(shape)) ** 2 * 0.5 + 0.2 * scale ** 2
    return p, g, m, v


def mixed_state(rng, shape=SHAPE):
    """(master float32 around +-1 and +-2, grad16 float16, m and v float32 after a few steps)."""
    master = (rng.choice([-2.0, -1.0, 1.0, 2.0], size=shape)
              + 0.01 * rng.standard_normal(shape)).astype(np.float32)
    grad16 = (0.1 * rng.standard_normal(shape)).astype(np.float16)
    m = (0.05 * rng.standard_normal(shape)).astype(np.float32)
    v = (0.005 + 0.005 * rng.random(shape)).astype(np.float32)
    return master, grad16, m, v
