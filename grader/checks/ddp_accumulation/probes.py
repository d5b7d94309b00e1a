"""Inputs for the ddp_accumulation checks: a linear layer's parameters and a global batch dealt
out to R simulated ranks as shards (rows in order: rank 0 holds the first n_0 rows, and so on).
No kink: the model is linear and the loss a square, so any draw of order 1 does.
"""
from __future__ import annotations

import math

import numpy as np


def draw_params(rng, d_in, d_out):
    """(W (D_in, D_out), b (D_out,)), scaled so the outputs are of order 1."""
    return rng.standard_normal((d_in, d_out)) / math.sqrt(d_in), 0.3 * rng.standard_normal(d_out)


def draw_rows(rng, n, d_in, d_out):
    return rng.standard_normal((n, d_in)), rng.standard_normal((n, d_out))


def draw_shards(rng, sizes, d_in, d_out):
    """xs, ys: one (n_r, D_in) and (n_r, D_out) array per rank, n_r = ``sizes[r]``."""
    rows = [draw_rows(rng, n, d_in, d_out) for n in sizes]
    return [x for x, _ in rows], [y for _, y in rows]


def bounds(n, m):
    """A shard of ``n`` rows in micro-batches of ``m``: [(start, stop)], the last maybe shorter."""
    return [(a, min(a + m, n)) for a in range(0, n, m)]


def whole(xs, ys):
    """The global batch: the shards stacked in rank order."""
    return np.concatenate(xs), np.concatenate(ys)


def where(xs, m) -> str:
    """The layout in words: ranks, shard sizes, micro-steps."""
    sizes = [len(x) for x in xs]
    steps = [len(bounds(n, m)) for n in sizes]
    rows = lambda k: f"{k} row{'s' * (k != 1)}"  # noqa: E731
    shards = (f"one shard of {rows(sizes[0])}" if len(sizes) == 1 else
              f"{len(sizes)} shards of {rows(sizes[0])}" if len(set(sizes)) == 1 else
              "shards of " + ", ".join(map(str, sizes)) + " rows")
    micro = (f"{steps[0]} micro-step{'s' * (steps[0] > 1)} each" if len(set(steps)) == 1
             else "micro-steps " + ", ".join(map(str, steps)))
    return f"R={len(sizes)} rank{'s' * (len(sizes) > 1)}, {shards}, micro_batch={m} ({micro}; N={sum(sizes)})"
