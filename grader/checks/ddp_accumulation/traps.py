"""ddp_accumulation's traps, and how an answer of ddp_grads is judged and diagnosed.

An answer is R gradients, one per rank; each must be the gradient of the mean loss over the whole
global batch, ``sum_{r,k} (n_rk / N) g_rk`` where ``g_rk`` is micro-batch k of rank r's own mean
gradient (the reference's ``linear_grads``). A wrong answer is diagnosed by behaviour: a narrow
dtype; ranks that disagree (each built from its own shard only: ``ranks-not-synced``); equality
with a known wrong weighting of the ``g_rk``; other weights that explain it (shown beside the
right ones); else by what factor it is off. The all-reduce count is judged in ``__init__.py``.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.ddp_accumulation.collective import counted_call
from backprop_traps.grader.checks.ddp_accumulation.probes import bounds, where, whole
from backprop_traps.grader.engine.question import Fail, Trap

DDP, GRADS = "ddp_grads", ("dW", "db")
TOL = 1e-10  # allowed error, relative to the sum of |micro-batch contributions|

TRAPS = [
    Trap("summed-not-averaged", "Your gradient is a sum where a mean is meant: an integer multiple "
         "of the right one when shards and micro-batches are equal (the all-reduce's sum over R ranks "
         "never divided by R, or the micro-steps' mean gradients added without dividing by the number "
         "of micro-steps K, or both). The loss is a mean over the N rows of the global batch: scale "
         "each micro-batch's mean gradient by its share of those rows, n_rk / N, and the all-reduce's "
         "sum of the ranks' buffers is then the answer.",
         symptom="Your gradient sums over the ranks or the micro-steps where the loss averages: it is "
                 "too large by R, K or R x K when the shards and micro-batches are equal."),
    Trap("all-reduce-every-micro-step", "The values are right, but you all-reduce after every "
         "micro-step: K times the traffic of one synchronisation per step. The all-reduce is linear, "
         "so summing the ranks' buffers once, after the last micro-step, gives the same gradient; "
         "in PyTorch, run every micro-step but the last inside model.no_sync().",
         symptom="The values are right, but your ranks all-reduce the gradient after every micro-step "
                 "instead of once per step."),
    Trap("local-batch-divisor", "Each rank divides by its own batch (its shard's rows) and the "
         "all-reduce then averages the ranks' gradients (or the global batch is taken to be R times "
         "one rank's shard): right only when every shard has the same number of rows. With a short "
         "last shard its rows count for more than the others. Divide by N, the rows of the whole "
         "global batch (the sum of the shards), so each micro-batch weighs n_rk / N.",
         symptom="Each rank divides by its own shard's rows, so a short shard's rows weigh more than the others'."),
    Trap("ranks-not-synced", "Each rank's gradient is built from its own shard only: the ranks "
         "never combine their gradients, so they disagree and each misses the other shards' rows. "
         "After the last micro-step, all-reduce the ranks' buffers so every rank holds the gradient "
         "of the whole global batch.",
         symptom="Your ranks never combine their gradients: each keeps its own shard's, and they disagree."),
]
EXPLAIN = {t.id: t.explanation for t in TRAPS}


# -- the reference's pieces ----------------------------------------------------------------
def micro_means(ctx, params, xs, ys, m):
    """[(rank, n_rk, g_rk)] for every micro-batch of every rank, g_rk the reference's mean gradient."""
    return [(r, b - a, ctx.ref.linear_grads(params, x[a:b], y[a:b]))
            for r, (x, y) in enumerate(zip(xs, ys)) for a, b in bounds(len(x), m)]


def combine(parts, weights):
    return tuple(sum(w * g[i] for w, (_, _, g) in zip(weights, parts)) for i in range(2))


def wrong_weights(parts, sizes) -> dict[str, list[np.ndarray]]:
    """The traps' weights on the micro-batches' mean gradients, on this layout."""
    R, N = len(sizes), sum(sizes)
    n = np.array([s for _, s, _ in parts], dtype=float)
    rank = [r for r, _, _ in parts]
    shard = np.array([sizes[r] for r in rank], dtype=float)
    steps = np.array([sum(1 for q, _, _ in parts if q == r) for r in rank], dtype=float)
    sums = [w for w in (np.ones_like(n), np.full_like(n, 1.0 / R), 1.0 / steps, n / shard, R * n / N)
            if w.sum() > 1.5]  # a sum where the mean's weights total 1 (R = 1: no sum over ranks)
    return {"summed-not-averaged": sums,
            "local-batch-divisor": [n / (R * shard), n / (R * max(sizes)), n / (R * sizes[0])]}


def right_weights(parts, sizes) -> np.ndarray:
    return np.array([s for _, s, _ in parts], dtype=float) / sum(sizes)


# -- calling and judging ddp_grads --------------------------------------------------------
def per_rank(ctx, value, ranks):
    """The answer as R lists of (dW, db); ``Fail`` on another structure."""
    if not isinstance(value, (list, tuple)) or len(value) != ranks:
        got = f"{len(value)} items" if isinstance(value, (list, tuple)) else f"a {type(value).__name__}"
        raise Fail(f"{DDP} must return a list with one (dW, db) per rank ({ranks} here), but returned {got}.")
    return [list(ctx.unpack(v, 2, DDP, ", ".join(GRADS))) for v in value]


def call_ddp(ctx, params, xs, ys, m):
    """The learner's per-rank answer and the grader's record of its all-reduces."""
    value, collective = counted_call(ctx, DDP, params, xs, ys, m)
    return per_rank(ctx, value, len(xs)), collective


def expect_ddp(ctx, params, xs, ys, m):
    """Every rank's gradient must be the global batch's, to TOL of the scale; returns the record."""
    got, collective = call_ddp(ctx, params, xs, ys, m)
    x, y = whole(xs, ys)
    want = ctx.ref.linear_grads(params, x, y)
    parts = micro_means(ctx, params, xs, ys, m)
    weights = right_weights(parts, [len(s) for s in xs])
    scale = combine([(r, s, [np.abs(g) for g in gs]) for r, s, gs in parts], weights)
    got = [[ctx.as_array(name, g, w, DDP) for name, g, w in zip(GRADS, rank, want)] for rank in got]
    errors = [float(np.max(np.abs(g.astype(np.float64) - w), initial=0.0)) / max(float(s.max()), 1e-300)
              for rank in got for g, w, s in zip(rank, want, scale)]
    if max(errors) > TOL or any(g.dtype != np.float64 for rank in got for g in rank):
        raise diagnose(ctx, xs, m, got, want, parts)
    return collective


def diagnose(ctx, xs, m, got, want, parts) -> Fail:
    """Why ``got`` is not the global batch's gradient on every rank, named by how it behaves."""
    at, sizes = where(xs, m), [len(x) for x in xs]
    for r, rank in enumerate(got):
        for name, g, w in zip(GRADS, rank, want):
            if g.dtype != np.float64:  # a narrower float is told whether its values are right at its precision
                said = (ctx.dtype_note(name, g, DDP, w)
                        or f"`{name}` from {DDP} is {g.dtype} where the contract wants float64.")
                return Fail(f"{at}: {said.replace(f'from {DDP}', f'from {DDP} on rank {r}', 1)}")
    flat = [np.concatenate([g.ravel() for g in rank]) for rank in got]
    if not all(close(f, flat[0]) for f in flat[1:]):
        r = next(r for r, f in enumerate(flat) if not close(f, flat[0]))
        if all(explained(f, [g for q, _, g in parts if q == i]) for i, f in enumerate(flat)):
            return Fail(f"{at}: rank {r}'s gradient differs from rank 0's, and each rank's is a "
                        f"combination of its own micro-batches only. {EXPLAIN['ranks-not-synced']}",
                        "ranks-not-synced")
        return Fail(f"{at}: rank {r}'s gradient differs from rank 0's. After the step every rank must "
                    "hold the same gradient, the global batch's.")
    right = right_weights(parts, sizes)
    target = np.concatenate([g.ravel() for g in want])
    for trap_id, forms in wrong_weights(parts, sizes).items():
        for w in forms:
            form = np.concatenate([g.ravel() for g in combine(parts, w)])
            if not close(form, target) and close(flat[0], form):
                return Fail(f"{at}: {DDP} is wrong. {EXPLAIN[trap_id]}", trap_id)
    weights = fitted(flat[0], [g for _, _, g in parts])
    if weights is not None and np.max(np.abs(weights - right)) > 1e-4 * right.max():
        return Fail(f"{at}: {DDP} is wrong. Your gradient adds up the micro-batches' mean gradients "
                    f"g_rk (rank by rank, micro-step by micro-step) with the weights {shown(weights)}; "
                    f"the global batch's gradient weights them by n_rk / N = {shown(right)}: each "
                    "micro-batch counts as its share of the global batch's rows, once.")
    i = int(np.argmax([np.max(np.abs(g - w), initial=0.0) for g, w in zip(got[0], want)]))
    return ctx.mismatch(GRADS[i], got[0][i], want[i], DDP, counts={
        "R, the number of ranks": len(xs), "K, the micro-steps of rank 0": len(bounds(sizes[0], m)),
        "N, the rows of the global batch": sum(sizes), "micro_batch": m}, example=at)


def close(u, v) -> bool:
    return np.shape(u) == np.shape(v) and bool(np.allclose(u, v, rtol=1e-6, atol=1e-8))


def fitted(v, grads):
    """Weights w with v = sum_j w_j g_j (least squares over every entry), when they explain v to
    1e-6 of its size; None when they do not or cannot (fewer entries than micro-batches)."""
    G = np.stack([np.concatenate([g.ravel() for g in gs]) for gs in grads], axis=1)  # P, J
    if G.shape[0] <= G.shape[1] or not np.any(v):
        return None
    w = np.linalg.lstsq(G, v, rcond=None)[0]
    return w if np.linalg.norm(G @ w - v) <= 1e-6 * np.linalg.norm(v) else None


def explained(v, grads) -> bool:
    return fitted(v, grads) is not None


def shown(weights) -> str:
    tiny = 1e-9 * float(np.max(np.abs(weights)))
    text = ", ".join(f"{(w if abs(w) > tiny else 0.0) + 0.0:.4g}" for w in weights[:8])
    return f"[{text}{', ...' if len(weights) > 8 else ''}]"
