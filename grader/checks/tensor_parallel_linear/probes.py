"""Inputs for the tensor_parallel_linear checks, the learner's calls with the grader's count of
their all-reduces, and the form of a per-rank answer.

A layer's whole weight is drawn and split over the ranks as the contract says (column-parallel:
by columns; row-parallel: by rows, and the input by columns to match), so every check can also
compute the one-device answer. Weights are scaled by 1 / sqrt(fan-in): values of order 1, and
tanh's argument away from saturation.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Fail

# all_reduce calls one call of each function needs: f is free forward, g free backward
EXPECTED_CALLS = {"column_parallel_forward": 0, "column_parallel_backward": 1, "row_parallel_forward": 1,
                  "row_parallel_backward": 0, "mlp_forward": 1, "mlp_backward": 1}
COUNTER = "take_all_reduces"


def column_layer(rng, P, N, D_in, D_out):
    """(x, W, b) and their layout on P ranks: (x_ranks, W_shards, b_shards)."""
    x = rng.standard_normal((N, D_in))
    W = rng.standard_normal((D_in, D_out)) / np.sqrt(D_in)
    b = rng.standard_normal(D_out)
    return (x, W, b), ([x.copy() for _ in range(P)], np.split(W, P, axis=1), np.split(b, P))


def row_layer(rng, P, N, D_in, D_out):
    """(x, W, b) and their layout on P ranks: (x_shards, W_shards, b_ranks)."""
    x = rng.standard_normal((N, D_in))
    W = rng.standard_normal((D_in, D_out)) / np.sqrt(D_in)
    b = rng.standard_normal(D_out)
    return (x, W, b), (np.split(x, P, axis=1), np.split(W, P, axis=0), [b.copy() for _ in range(P)])


def mlp_block(rng, P, N, D, H):
    """(x, W1, b1, W2, b2) and the shards (x_ranks, W1_shards, b1_shards, W2_shards, b2_ranks)."""
    x = rng.standard_normal((N, D))
    W1, b1 = rng.standard_normal((D, H)) / np.sqrt(D), 0.3 * rng.standard_normal(H)
    W2, b2 = rng.standard_normal((H, D)) / np.sqrt(H), rng.standard_normal(D)
    return (x, W1, b1, W2, b2), ([x.copy() for _ in range(P)], np.split(W1, P, axis=1), np.split(b1, P),
                                 np.split(W2, P, axis=0), [b2.copy() for _ in range(P)])


def ranks(value, P: int, fn: str, name: str) -> list:
    """``value`` as a list of P per-rank values, or ``Fail`` saying what it is instead."""
    if isinstance(value, np.ndarray) or not isinstance(value, (list, tuple)):
        raise Fail(f"{fn} must return `{name}` as a list of {P} arrays, one per rank (rank r's at "
                   f"index r), but returned {type(value).__name__}"
                   + (f" of shape {value.shape}" if isinstance(value, np.ndarray) else ""))
    if len(value) != P:
        raise Fail(f"{fn} must return `{name}` as a list of {P} arrays, one per rank, but its list "
                   f"holds {len(value)}")
    return list(value)


def counted(ctx, fn, *args, P: int, sums=None):
    """The learner's ``fn(*args)`` on P ranks, the all-reduces the grader did for it meanwhile,
    and whether its replicated outputs came out of them: ``sums(answer)`` gives, for each such
    output, (its per-rank arrays, the bias added after the sum or None). In process (``grade
    validate``) the namespace's own setup-cell counter counts, and provenance is not asked."""
    get = getattr(ctx.sandbox, "services", {}).get("_counter")
    if get is None:
        ctx.service(COUNTER)
        value = ctx.call(fn, *args)
        return value, ctx.service(COUNTER), True
    counter = get()
    counter.begin(P)
    try:
        value = ctx.call(fn, *args)
        try:
            from_sums = sums is None or all(counter.came_from_sums(list(a), b) for a, b in sums(value))
        except Exception:  # noqa: BLE001 (an answer of the wrong form: its values fail first)
            from_sums = False
    finally:
        counter.end()
    return value, counter.calls, from_sums


def expect_calls(fn: str, calls: int, from_sums: bool, P: int, traps) -> None:
    """The values were right: now the communication. Fewer all-reduces than needed means the
    ranks' values were summed some other way; more is the double all-reduce."""
    want = EXPECTED_CALLS[fn]
    if calls > want:
        need = "none is needed" if want == 0 else "one call does the job" if want == 1 else f"{want} calls do it"
        raise Fail(f"{fn} gave the right values but called all_reduce {times(calls)} on {P} ranks, where "
                   f"{need}: every extra collective moves a whole activation between the GPUs. "
                   + traps.explanation, traps.id)
    if calls < want or not from_sums:
        why = (("never called all_reduce" if calls == 0 else f"called all_reduce {times(calls)}")
               + f", where {want} {'call is' if want == 1 else 'calls are'} needed" if calls < want
               else "its replicated outputs are not the sums all_reduce returned")
        raise Fail(f"{fn} gave the right values, but {why}: the ranks' values were summed some other "
                   "way. On real GPUs a rank cannot read another rank's arrays; sum over the ranks only "
                   "with all_reduce, called by that name when your function runs (the grader puts its own "
                   "all_reduce in place after your code loads and counts its calls; an alias or a default "
                   "argument bound earlier keeps the setup cell's, which nobody counts).")


def times(n: int) -> str:
    return "never" if n == 0 else "once" if n == 1 else f"{n} times"
