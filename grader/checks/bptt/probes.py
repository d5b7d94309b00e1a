"""Inputs for the bptt checks, and the forward whose finite differences are the truncated
gradient.

Shapes: x (T, N, D), h0 (N, H), hs (T, N, H), W_xh (D, H), W_hh (H, H), b (H,). The recurrent
weight is drawn at a chosen spectral radius, so the carried gradient neither vanishes nor
explodes over the short sequences checked (and does, on purpose, over the long one).
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.bptt.traps import chunk_starts


def recurrent_weight(rng, h, radius):
    """W_hh (H, H), random, scaled to spectral radius ``radius``."""
    w = rng.standard_normal((h, h))
    return w * (radius / max(abs(np.linalg.eigvals(w))))


def sequence(rng, T, N, D, H, radius=0.9):
    """(x, h0, W_xh, W_hh, b) with pre-activations of order 1: the tanh neither linear nor flat."""
    x = rng.standard_normal((T, N, D))
    h0 = 0.5 * rng.standard_normal((N, H))
    W_xh = rng.standard_normal((D, H)) / np.sqrt(D)
    return x, h0, W_xh, recurrent_weight(rng, H, radius), 0.3 * rng.standard_normal(H)


def chunked_forward(ref, T, k, fixed_hs):
    """``f(x, h0, W_xh, W_hh, b) -> hs`` run chunk by chunk, each chunk after the first starting
    from the state in ``fixed_hs`` (the unperturbed run's) as a constant: the function whose
    exact gradient truncated BPTT computes (PyTorch's detach every k steps)."""
    starts = [0] + sorted(chunk_starts(T, k))

    def f(x, h0, W_xh, W_hh, b):
        pieces = []
        for start, stop in zip(starts, starts[1:] + [T]):
            h_in = h0 if start == 0 else fixed_hs[start - 1]
            pieces.append(ref.rnn_forward(x[start:stop], h_in, W_xh, W_hh, b))
        return np.concatenate(pieces, axis=0)
    return f


def gradients_list(rng, shapes, total):
    """Arrays of ``shapes`` whose global norm is exactly ``total`` (up to rounding), with norms
    unequal enough that per-tensor clipping differs from global clipping."""
    grads = [rng.standard_normal(s) * (3.0 ** i) for i, s in enumerate(shapes)]
    norm = np.sqrt(sum(float(np.sum(g * g)) for g in grads))
    return [g * (total / norm) for g in grads]
