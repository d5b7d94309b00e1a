"""Inputs for embedding_backward's checks, drawn for the check at hand.

ids (B, T) int64 in [0, V); W (V, D); dout (B, T, D). A draw with repeats takes the batch's
ids from a few distinct ones, so nearly every id appears more than once; a padding draw pads
the sequences' tails with padding_idx and keeps every other id distinct (what is graded there
is the padding row alone); a large-vocabulary draw takes its ids from a table far larger than
the ids used (a dense form then has many more rows than the sparse one).
"""
from __future__ import annotations

import numpy as np

HUGE_V = 2 ** 32
"""A hashed table of 2^32 rows: a dense V x D gradient (512 GiB at D = 16) cannot be held on any
machine the grader runs on, and the sandbox caps the address space at 4 GiB anyway."""
HUGE_D = 16


def table(rng, V: int, D: int) -> np.ndarray:
    return rng.standard_normal((V, D))


def repeated_ids(rng, V: int, B: int, T: int, distinct: int) -> np.ndarray:
    """(B, T) ids drawn from ``distinct`` ids of [0, V), each of which appears at least twice."""
    pool = rng.choice(V, size=distinct, replace=False)
    ids = np.concatenate([pool, pool, rng.choice(pool, size=B * T - 2 * distinct)])
    return rng.permutation(ids).reshape(B, T).astype(np.int64)


def distinct_ids(rng, V: int, B: int, T: int) -> np.ndarray:
    return rng.choice(V, size=B * T, replace=False).reshape(B, T).astype(np.int64)


def padded_ids(rng, V: int, B: int, T: int, padding_idx: int) -> np.ndarray:
    """(B, T) sequences of distinct ids other than padding_idx, each padded at its tail (at least
    one padding position per sequence, the first sequence unpadded but for its last token)."""
    others = np.setdiff1d(np.arange(V), [padding_idx])
    ids = rng.choice(others, size=B * T, replace=False).reshape(B, T).astype(np.int64)
    for b in range(B):
        ids[b, T - 1 - int(rng.integers(0, T // 2)):] = padding_idx
    return ids


def huge_ids(rng, B: int, T: int, distinct: int) -> np.ndarray:
    """(B, T) ids from ``distinct`` ids spread over [0, HUGE_V), the last row of the table among them."""
    pool = np.unique(np.concatenate([rng.integers(0, HUGE_V - 1, size=distinct - 1), [HUGE_V - 1]]))
    return rng.choice(pool, size=(B, T)).astype(np.int64)


def upstream_like(rng, ids: np.ndarray, D: int) -> np.ndarray:
    """A random dout (B, T, D), never all-ones."""
    from backprop_traps.grader.engine.gradcheck import upstream
    return upstream(rng, ids.shape + (D,))
