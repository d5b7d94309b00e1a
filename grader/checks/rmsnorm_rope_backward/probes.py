"""rmsnorm_rope_backward's inputs: rows for RMSNorm, rows and positions for RoPE, and the names
of the learner's functions. Shapes: x, dy (N, D); gamma (D,); pos int64 (N,)."""
from __future__ import annotations

import numpy as np

RMS_FWD, RMS_BWD = "rmsnorm_forward", "rmsnorm_backward"
ROPE_FWD, ROPE_BWD = "rope_forward", "rope_backward"
EPS = 1e-5


def rows(rng, n, d):
    """(N, D) rows away from 0 on average, so that a mean subtracted changes every value."""
    return rng.normal(size=(n, 1)) + rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=(n, 1))


def gamma(rng, d):
    return rng.normal(size=d) + 1.0


def positions(rng, n, top=4096):
    """int64 (N,): position 0 (where every rotation is the identity) and large ones."""
    pos = rng.integers(1, top, size=n).astype(np.int64)
    pos[0] = 0 if n > 2 else pos[0]
    return pos


def where_rms(n, d, eps) -> str:
    return f"N={n}, D={d}, eps={eps:g}"


def where_rope(n, d, base) -> str:
    return f"N={n}, D={d}, base={base:g}"
