"""Inputs for the grad_accumulation checks: question 05's MLP, rows whose hidden
pre-activations keep away from the ReLU's kink where finite differences are taken, and batches
whose micro-batches cancel (each micro-batch's gradient of order C, the whole batch's of order 1).
"""
from __future__ import annotations

import math

import numpy as np

C_BIG = 1e6            # the targets' size in the cancelling batch


def draw_params(rng, d_in, hidden, d_out):
    """(W1, b1, W2, b2), scaled so z and out are of order 1."""
    return (rng.standard_normal((d_in, hidden)) / math.sqrt(d_in), 0.3 * rng.standard_normal(hidden),
            rng.standard_normal((hidden, d_out)) / math.sqrt(hidden), 0.3 * rng.standard_normal(d_out))


def draw_rows(rng, params, n, margin=1e-9):
    """x (n, D_in) with every |z| >= margin (no ReLU kink flips with a product's rounding, or, at
    MARGIN, within a finite-difference step), y (n, D_out)."""
    W1, b1, W2, _ = params
    x = rng.standard_normal((n, W1.shape[0]))
    for _ in range(200):
        near = np.min(np.abs(x @ W1 + b1), axis=1) < margin
        if not near.any():
            break
        x[near] = rng.standard_normal((int(near.sum()), W1.shape[0]))
    return x, rng.standard_normal((n, W2.shape[1]))


def cancelling_rows(rng, params, m, pairs, tail=0):
    """Pairs of micro-batches with the same rows and targets +C and -C (plus noise): each
    micro-batch's gradient is of order C, the whole batch's of order 1. ``tail`` rows of ordinary
    targets make a shorter last micro-batch."""
    x0, _ = draw_rows(rng, params, m)
    d_out = params[2].shape[1]
    x = np.concatenate([x0] * (2 * pairs) + [draw_rows(rng, params, tail)[0]])
    y = np.concatenate([s * C_BIG + rng.standard_normal((m, d_out)) for s in [1.0, -1.0] * pairs]
                       + [rng.standard_normal((tail, d_out))])
    return x, y
