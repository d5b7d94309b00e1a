"""Hidden checks for ddp_accumulation: data-parallel gradient accumulation over simulated ranks.

A linear layer ``params = (W (D_in, D_out), b (D_out,))`` with the loss
``0.5 * sum((x W + b - y) ** 2) / N``; the global batch of N rows is dealt out as R shards
``xs[r] (n_r, D_in)``, ``ys[r] (n_r, D_out)``; each rank runs its shard in micro-batches of
``m = micro_batch`` rows (K_r = ceil(n_r / m) micro-steps). ``linear_grads`` is checked against
central differences of the reference's ``linear_loss``; ``ddp_grads`` against the reference's
``linear_grads`` on the whole global batch, on every rank, and a wrong answer is diagnosed by
how it behaves (``traps.py``). Traffic is counted by the grader: the setup cell's ``all_reduce``
is replaced by one that runs in the grader (``collective.py``), which also checks that each rank
sent its own shard's gradient. Each trap has a runnable wrong answer in
tests/answers/ddp_accumulation/.
"""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.grader.checks.ddp_accumulation import collective
from backprop_traps.grader.checks.ddp_accumulation.collective import counted_call
from backprop_traps.grader.checks.ddp_accumulation.probes import draw_params, draw_rows, draw_shards, where, whole
from backprop_traps.grader.checks.ddp_accumulation.traps import DDP, GRADS, TRAPS, expect_ddp, per_rank
from backprop_traps.grader.engine.question import Fail, Question

LOSS, GRAD = "linear_loss", "linear_grads"
ONE = np.float64(1.0)  # the loss is a scalar: no upstream gradient to contract with
D_IN, D_OUT = 6, 3     # P = 21 gradient entries: more than any layout's micro-batches (weights fit)
TRAFFIC_RANKS, TRAFFIC_SHARD, TRAFFIC_M = 3, 12, 3   # 4 micro-steps on every rank
MORE_STEPS_M = 2                                     # ... and 6: does the traffic follow?

QUESTION = Question("ddp_accumulation", "Data-parallel gradient accumulation: one all-reduce per "
                    "step", traps=TRAPS, difficulty="hard", kinks={})
QUESTION.services = collective.services


# -- linear_loss, linear_grads -------------------------------------------------------------
@QUESTION.check("linear_loss: the loss's value", points=1, hints=(
    "Divide by the number of rows N, not by N times D_out.",
    "out = x W + b; the bias is added to every row.",
))
def loss_values(ctx):
    for n in (7, 1):
        params = draw_params(ctx.rng, D_IN, D_OUT)
        x, y = draw_rows(ctx.rng, n, D_IN, D_OUT)
        got, want = ctx.call(LOSS, params, x, y), ctx.ref.linear_loss(params, x, y)
        if isinstance(got, np.ndarray) and got.size == 1 and got.dtype.kind == "f":
            narrow = ctx.dtype_note("loss", got.reshape(()), LOSS, np.asarray(want))
            if narrow:  # a float32 loss: the dtype is what differs, not a digit shown at 6 places
                raise Fail(f"{narrow.rstrip('.')} (N={n}, D_out={D_OUT}). Return a Python float, in float64.")
            got = float(got.reshape(-1)[0])
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise Fail(f"{LOSS} must return the loss as one number (a Python float), not {type(got).__name__}")
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12):
            per_element = " (it looks divided by N * D_out, not by N)" if math.isclose(got * D_OUT, want) else ""
            digits = 6 if not math.isclose(got, want, rel_tol=1e-5) else 12  # a near miss shows where it differs
            raise Fail(f"{LOSS} returned {got:.{digits}g}, expected {want:.{digits}g} (N={n}, D_out={D_OUT})"
                       f"{per_element}.")


@QUESTION.check("linear_grads: the gradient of the batch's mean loss (finite differences)", points=2, hints=(
    "The residual out - y, divided by the number of rows you were given, is where both gradients start.",
    "dW pairs every input feature with every output's residual, over the rows; db has one entry per output.",
))
def batch_gradient(ctx):
    for n in (5, 1):
        params = draw_params(ctx.rng, D_IN, D_OUT)
        x, y = draw_rows(ctx.rng, n, D_IN, D_OUT)
        got = ctx.unpack(ctx.call(GRAD, params, x, y), 2, GRAD, ", ".join(GRADS))
        for i, name in enumerate(GRADS):
            def loss_of(value, i=i):
                changed = list(params)
                changed[i] = value
                return ctx.ref.linear_loss(tuple(changed), x, y)
            g = ctx.expect_gradient(name, got[i], loss_of, params[i], ONE, GRAD,
                                    counts={"N, the number of rows": n, "D_out": D_OUT})
            if g.dtype != np.float64:
                raise Fail(f"`{name}` from {GRAD} is {g.dtype}; the contract says float64.")


# -- ddp_grads: values ---------------------------------------------------------------------
@QUESTION.check("ddp_grads: equal shards whose micro-batches divide them", points=2, hints=(
    "The loss is a mean over every row of every shard: which share of it is one micro-batch's mean loss?",
    "all_reduce sums over the ranks; nothing divides by the number of ranks unless you do.",
    "Each micro-batch's mean gradient counts with weight n_rk / N, N the global batch's rows.",
))
def even_layout(ctx):
    for ranks in (2, 3):
        k = int(ctx.rng.choice([j for j in (2, 3, 4) if j != ranks]))  # K != R: the factors differ
        m = int(ctx.rng.integers(2, 4))
        params = draw_params(ctx.rng, D_IN, D_OUT)
        xs, ys = draw_shards(ctx.rng, [k * m] * ranks, D_IN, D_OUT)
        expect_ddp(ctx, params, xs, ys, m)


@QUESTION.check("ddp_grads: equal shards with a shorter last micro-batch", points=1, hints=(
    "With 7 rows in micro-batches of 3, the last micro-step has 1 row: how much of the loss is it?",
    "Weight each micro-batch by its own rows over N, not by one over the number of micro-steps.",
))
def short_micro_batch(ctx):
    m = int(ctx.rng.integers(3, 5))
    params = draw_params(ctx.rng, D_IN, D_OUT)
    xs, ys = draw_shards(ctx.rng, [2 * m + 1] * 2, D_IN, D_OUT)
    expect_ddp(ctx, params, xs, ys, m)


@QUESTION.check("ddp_grads: a shorter last shard", points=2, hints=(
    "Shards of 8, 8 and 3 rows make a global batch of 19: how much of the loss is the last shard's?",
    "Averaging the ranks' own mean gradients gives 3 rows the weight of 8.",
    "Every rank knows N, the sum of the shards' rows; divide by it, and let all_reduce add the ranks up.",
))
def short_shard(ctx):
    rng = ctx.rng
    m = int(rng.integers(2, 5))
    for sizes in ([2 * m, 2 * m, int(rng.integers(1, m))],                       # a last shard under m
                  [3 * m, 3 * m, 3 * m, 2 * m + int(rng.integers(1, m))]):        # fewer micro-steps too
        params = draw_params(rng, D_IN, D_OUT)
        xs, ys = draw_shards(rng, sizes, D_IN, D_OUT)
        expect_ddp(ctx, params, xs, ys, m)


@QUESTION.check("ddp_grads: one rank, micro_batch >= the shard, one-row shards", points=1, hints=(
    "With one rank, ddp_grads is plain gradient accumulation; with micro_batch >= a shard, one micro-step.",
    "Slicing past the end of an array is fine in numpy: no special case is needed.",
))
def edges(ctx):
    params = draw_params(ctx.rng, D_IN, D_OUT)
    xs, ys = draw_shards(ctx.rng, [7], D_IN, D_OUT)
    for m in (2, 7 + int(ctx.rng.integers(0, 5))):
        expect_ddp(ctx, params, xs, ys, m)
    xs, ys = draw_shards(ctx.rng, [5, 5], D_IN, D_OUT)
    expect_ddp(ctx, params, xs, ys, 5 + int(ctx.rng.integers(0, 5)))
    xs, ys = draw_shards(ctx.rng, [1, 1, 1], D_IN, D_OUT)
    expect_ddp(ctx, params, xs, ys, 1)


# -- ddp_grads: the all-reduce's traffic ----------------------------------------------------
@QUESTION.check(f"ddp_grads: the all-reduce's traffic (R={TRAFFIC_RANKS}, "
                f"{TRAFFIC_SHARD // TRAFFIC_M} micro-steps per rank)", points=2, hints=(
    "Count what you send through all_reduce in one call of ddp_grads: how many times the gradient's size?",
    "The all-reduce is a sum, and so is accumulation: does it matter whether the ranks are summed "
    "at every micro-step or once at the end?",
    "Keep each rank's buffer local through the micro-steps; all-reduce it once, after the last.",
))
def traffic(ctx):
    params = draw_params(ctx.rng, D_IN, D_OUT)
    xs, ys = draw_shards(ctx.rng, [TRAFFIC_SHARD] * TRAFFIC_RANKS, D_IN, D_OUT)
    try:
        record = expect_ddp(ctx, params, xs, ys, TRAFFIC_M)
    except Fail as fail:
        raise Fail(fail.feedback + " The traffic is judged once the gradient is right.", fail.trap) from None
    size, steps = sum(p.size for p in params), TRAFFIC_SHARD // TRAFFIC_M
    sent, calls = record.elements, len(record.calls)
    at = where(xs, TRAFFIC_M)
    if sent == 0:
        raise collective.no_collective_fail(DDP)
    if sent < size:
        raise Fail(f"{at}: {DDP} all-reduced {sent} values per rank, but the gradient has {size} "
                   "entries: some of it never crossed between the ranks, so the rest was combined "
                   "some other way. Every gradient entry goes through all_reduce.")
    if sent >= 2 * size:
        times = sent / size
        said = (f"{at}: {DDP} all-reduced {sent} values per rank in {calls} call{'s' * (calls > 1)}, "
                f"{times:g} times the gradient's {size} entries.")
        more = grows_with_micro_steps(ctx, params, xs, ys, sent)
        if more is not None:
            raise Fail(f"{said} With micro_batch={MORE_STEPS_M} ({TRAFFIC_SHARD // MORE_STEPS_M} micro-steps) "
                       f"it sent {more}. {QUESTION.trap('all-reduce-every-micro-step').explanation}",
                       "all-reduce-every-micro-step")
        raise Fail(f"{said} One all-reduce of each entry per step is enough.")
    own = [np.concatenate([g.ravel() for g in ctx.ref.linear_grads(params, x, y)]) * len(x)
           for x, y in zip(xs, ys)]
    bad = collective.own_gradients(record, own, size)
    if bad is not None:
        raise Fail(f"{at}: what rank {bad} sent through all_reduce is not its own shard's gradient "
                   "(scaled): a rank knows only its own rows, so what it sends must come from them. "
                   "Send each rank's accumulated buffer, and build every rank's answer from what "
                   "all_reduce returns.")
    answer = np.concatenate([g.ravel() for g in ctx.ref.linear_grads(params, *whole(xs, ys))])  # checked above
    if not collective.answer_from_sums(record, answer):
        raise Fail(f"{at}: every rank sent its own gradient, but the answer is not in what all_reduce "
                   "returned (in any layout, at any scale): the ranks' gradients were combined some "
                   "other way, reading the other ranks' rows. Build every rank's answer from the sums "
                   "all_reduce returns.")


def grows_with_micro_steps(ctx, params, xs, ys, sent):
    """The traffic of the same step in more, smaller micro-steps, when it grows in proportion to
    their number (an all-reduce at every micro-step); None when it does not."""
    try:
        _, record = counted_call(ctx, DDP, params, xs, ys, MORE_STEPS_M)
    except Fail:
        return None
    steps, more_steps = TRAFFIC_SHARD // TRAFFIC_M, TRAFFIC_SHARD // MORE_STEPS_M
    return record.elements if record.elements * steps == sent * more_steps else None


@QUESTION.check("inputs left unchanged", points=1, hints=(
    "Does any of your functions change params, xs, ys or their arrays in place (+=, *=, slices assigned)?",
    "x[a:b] is a view: writing into it writes into x.",
))
def inputs_unchanged(ctx):
    params = draw_params(ctx.rng, D_IN, D_OUT)
    x, y = draw_rows(ctx.rng, 6, D_IN, D_OUT)
    xs, ys = draw_shards(ctx.rng, [4, 3], D_IN, D_OUT)
    everything = (np.concatenate(xs), np.concatenate(ys))
    want = ctx.ref.linear_grads(params, *everything)

    def right_on_every_rank(value):
        try:
            ranks = per_rank(ctx, value, len(xs))
        except Fail:
            return False
        return all(len(r) == 2 and all(np.shape(g) == np.shape(w) and np.allclose(g, w) for g, w in zip(r, want))
                   for r in ranks)
    names = ["params", "x", "y"]
    ctx.expect_inputs_unchanged([
        (LOSS, (params, x, y), names, ctx.ref.linear_loss(params, x, y)),
        (GRAD, (params, x, y), names, ctx.ref.linear_grads(params, x, y)),
        (DDP, (params, xs, ys, 2), ["params", "xs", "ys"], right_on_every_rank)])
