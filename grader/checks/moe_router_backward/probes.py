"""Inputs for the moe_router_backward checks.

Shapes: x (N, D), Wr (D, E), logits = x @ Wr (N, E), dgates (N, k). Top-k routing is
piecewise: a derivative exists only where no two of a token's k + 1 largest logits are equal
(the selection, and the order of the k slots that dgates pairs with, must not change within a
finite-difference step). ``tie_free`` draws logits whose k + 1 largest are at least MARGIN
apart; ``tied`` draws small integers whose products tie exactly at the selection's edge, where
the tie rule (the lower expert index first) decides.
"""
from __future__ import annotations

import numpy as np

MARGIN = 1e-2  # the gap between a token's k + 1 largest logits, against steps of 1e-6 in x, Wr


def gaps_ok(logits, k) -> bool:
    """Every token's k + 1 largest logits (k where k = E) are at least MARGIN apart."""
    top = -np.sort(-logits, axis=1)[:, :k + 1]
    return bool(np.all(-np.diff(top, axis=1) > MARGIN))


def tie_free(rng, N, D, E, k, tries=200):
    """(x, Wr) of standard normals, drawn again until ``gaps_ok``."""
    for _ in range(tries):
        x, Wr = rng.standard_normal((N, D)), rng.standard_normal((D, E))
        if gaps_ok(x @ Wr, k):
            break
    return x, Wr


def tied(rng, N, D, E, k, tries=200):
    """(x, Wr) of small integers in which at least half of the tokens have their k-th and
    (k + 1)-th largest logits exactly equal (integer arithmetic: exact in float64). With k = E
    there is no (k + 1)-th: the first draw, whose ties are among the selected."""
    for _ in range(tries):
        x = rng.integers(-2, 3, size=(N, D)).astype(np.float64)
        Wr = rng.integers(-1, 2, size=(D, E)).astype(np.float64)
        top = -np.sort(-(x @ Wr), axis=1)
        if k >= E or np.sum(top[:, k - 1] == top[:, k]) * 2 >= N:
            break
    return x, Wr


def upstream_gates(rng, N, k):
    """dgates (N, k): random, never all ones (a gradient check's upstream)."""
    return rng.standard_normal((N, k))
