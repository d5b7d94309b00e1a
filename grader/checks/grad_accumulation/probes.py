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


def kink_net(rng, n=6, d_in=4, hidden=6, d_out=3):
    """params, x, y of halves in [-1, 1]: every product and sum is exact in float64, so some
    pre-activations z are exactly 0, the ReLU's boundary (its derivative there is 0: the mask
    is z > 0). Redrawn until a mask taken as z >= 0 would change the gradient."""
    half = lambda shape: rng.integers(-2, 3, size=shape) / 2.0  # noqa: E731
    for _ in range(200):
        params = (half((d_in, hidden)), half(hidden), half((hidden, d_out)), half(d_out))
        x, y = half((n, d_in)), half((n, d_out))
        if not np.allclose(np.concatenate([g.ravel() for g in mask_grads(params, x, y, inclusive=True)]),
                           np.concatenate([g.ravel() for g in mask_grads(params, x, y)])):
            return params, x, y
    raise RuntimeError("no network with a decisive exact zero drawn")  # never with these sizes


def mask_grads(params, x, y, inclusive=False):
    """mlp_grads with the ReLU's mask taken as z > 0, or (``inclusive``, the trap) as z >= 0:
    only to draw kink_net's inputs and to recognise the trap, never to grade."""
    W1, b1, W2, b2 = params
    z = x @ W1 + b1                                   # N, H
    h = np.maximum(z, 0.0)                            # N, H
    dout = (h @ W2 + b2 - y) / len(x)                 # N, D_out
    dz = (dout @ W2.T) * ((z >= 0) if inclusive else (z > 0))
    return x.T @ dz, dz.sum(axis=0), h.T @ dout, dout.sum(axis=0)
