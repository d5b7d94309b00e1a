"""Hidden checks for adamw_step: one AdamW step (bias correction, decoupled decay, a decay
mask, eps outside the root), the mixed-precision step on a float32 master copy with skipped
steps, and the bookkeeping: 6 N D training FLOPs, bytes per parameter under ZeRO.

Shapes: p, g, m, v of one shape, (4, 5) here. An optimizer step is checked by the step it
takes, ``new p - p``, against the reference's (``ctx.ref``, the solution notebook), so that a
mistake in the update is not hidden by the size of p. Wrong answers are named by equality
with a trap's form on the same inputs (``traps``), and the low-precision update by its
behaviour: a master copy whose entries are all float16 numbers, or that did not move.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.adamw_step import probes, traps
from backprop_traps.grader.checks.adamw_step.probes import BETAS, EPS
from backprop_traps.grader.checks.adamw_step.traps import BYTES, FLOPS, MIXED, STEP
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("adamw_step", "AdamW: one optimizer step as frameworks take it",
                    traps=traps.TRAPS, difficulty="medium",
                    kinks={"fp16-largest-finite": "a float16 gradient of exactly 65504 (finite: no skip)"},
                    dtypes={MIXED: {"master": "float32", "weight16": "float16", "m": "float32",
                                    "v": "float32", "t": "int"}})  # docs/questions/adamw_step.md


def check_step(ctx, p, g, m, v, t, lr, eps, weight_decay, decay):
    """The learner's adamw_step against the reference's: m, v, then the step new p - p."""
    args = (p, g, m, v, t, lr, *BETAS, eps, weight_decay, decay)
    got = ctx.unpack(ctx.call(STEP, *args), 3, STEP, "p, m, v")
    want = ctx.ref.adamw_step(*args)
    forms = traps.step_forms(ctx, *args)
    where = f" (t = {t}, lr = {lr:g}, weight_decay = {weight_decay:g}, decay = {decay})"
    try:
        for i, name in ((1, "m"), (2, "v")):
            ctx.expect_array(name, got[i], want[i], STEP, traps=forms[i])
        new_p = ctx.as_array("p", got[0], want[0], STEP)
        steps = {trap: [f - p for f in fs] for trap, fs in forms[0].items()}
        ctx.expect_array("the step (new p - p)", new_p - p, want[0] - p, STEP, traps=steps)
    except Fail as failure:
        head, _, details = failure.feedback.partition("\n")
        raise Fail(head.replace(f"from {STEP}", f"from {STEP}{where}", 1)
                   + (f"\n{details}" if details else ""), failure.trap) from None


@QUESTION.check("AdamW: the moments and the bias-corrected step (t = 1 and t = 10)", points=3, hints=(
    "m and v start at zero: after one step, how large are they compared with g and g squared?",
    "Divide each moment by one minus its beta to the power t before the step.",
    "With a gradient that never changes, the corrected step is exactly lr in size, from the "
    "first step on.",
))
def adam_update(ctx):
    for t in (1, 10):
        check_step(ctx, *probes.state(ctx.rng, t), t, 0.01, EPS, 0.0, True)


@QUESTION.check("weight decay (t = 1 and t = 5, weight_decay = 0.1)",
                points=2, hints=(
    "Does your weight decay pass through m and v?",
    "AdamW multiplies p by one minus lr times weight_decay, apart from the Adam update.",
))
def decoupled_decay(ctx):
    for t in (1, 5):
        check_step(ctx, *probes.state(ctx.rng, t), t, 0.01, EPS, 0.1, True)


@QUESTION.check("no weight decay where the mask says not to (biases, norm weights)", points=1, hints=(
    "What does the decay argument say about this tensor?",
))
def decay_mask(ctx):
    check_step(ctx, *probes.state(ctx.rng, 3), 3, 0.01, EPS, 0.1, False)


@QUESTION.check("tiny gradients, where v is near eps (and zero gradients)",
                points=1, hints=(
    "Where the gradients are around 1e-5, v is around 1e-10: compare it with eps = 1e-8.",
    "PyTorch adds eps to the square root of v-hat, not to v-hat.",
))
def eps_placement(ctx):
    p, g, m, v = probes.state(ctx.rng, 1)
    g = g * 10.0 ** ctx.rng.uniform(-5, -3, size=g.shape)  # 1e-6 to 1e-4
    g[0, :2] = 0.0  # a zero gradient on a first step: m = v = 0, the step must be 0, not NaN
    check_step(ctx, p, g, m, v, 1, 0.01, EPS, 0.0, True)


def mixed(ctx, master, grad16, m, v, t, lr=1e-4, weight_decay=0.01):
    args = (master, grad16, m, v, t, lr, *BETAS, EPS, weight_decay, True)
    got = ctx.unpack(ctx.call(MIXED, *args), 5, MIXED, "master, weight16, m, v, t")
    return got, ctx.ref.mixed_precision_step(*args)


def expect_dtype(name, value, trap=None):
    """The contract's dtype for output ``name`` of mixed_precision_step (``QUESTION.dtypes``)."""
    dtype = QUESTION.contract_dtype(MIXED, name)
    if isinstance(value, np.ndarray) and value.dtype != dtype:
        text = f"`{name}` from {MIXED} is {value.dtype}, not {np.dtype(dtype)}."
        raise Fail(text + (f" {QUESTION.trap(trap).explanation}" if trap else ""), trap)


def expect_master(ctx, got, want, before):
    """The learner's new master weights: float32, and the reference's step; a copy that lost
    the step (all float16 numbers, or not moved) is named update-in-low-precision."""
    expect_dtype("master", got, "update-in-low-precision")
    new_master = ctx.as_array("master", got, want, MIXED)
    if not ctx.close(new_master, want) and not np.array_equal(want, before) and (
            traps.in_float16(new_master) or np.array_equal(new_master, before)):
        located = ctx.locate("master", new_master, want)
        raise Fail(f"The master weights from {MIXED} lost the step: every entry is a float16 "
                   f"number, or none moved. {QUESTION.trap('update-in-low-precision').explanation}"
                   + (f"\n{located}" if located else ""), "update-in-low-precision")
    ctx.expect_array("master", new_master, want, MIXED)


@QUESTION.check("mixed_precision_step: one step from float16 gradients (lr = 1e-4)",
                points=2, hints=(
    "With lr = 1e-4, how far does a weight of about 1 move, and can float16 hold the result?",
    "Keep the master weights, m and v in float32; cast to float16 only after the step.",
))
def master_copy(ctx):
    master, grad16, m, v = probes.mixed_state(ctx.rng)
    got, want = mixed(ctx, master, grad16, m, v, 4)
    expect_master(ctx, got[0], want[0], master)
    for i, name in ((2, "m"), (3, "v")):
        expect_dtype(name, got[i])
        ctx.expect_array(name, got[i], want[i], MIXED)
    expect_dtype("weight16", got[1])
    ctx.expect_array("weight16", got[1], want[1], MIXED, rtol=1e-3)
    if not isinstance(got[4], (int, np.integer)) or got[4] != want[4]:
        raise Fail(f"`t` from {MIXED} is {got[4]!r}; after a step taken from t = 4 it is {want[4]}.")


@QUESTION.check("a skipped step (inf or NaN in the gradients) changes nothing; the largest "
                "finite float16 does not skip", points=2, kinks=("fp16-largest-finite",), hints=(
    "Which of the outputs may a step that never happened change?",
    "Check every gradient entry before touching the state; 65504 is a finite float16.",
))
def skipped_step(ctx):
    for bad in (np.inf, np.nan, None):
        master, grad16, m, v = probes.mixed_state(ctx.rng)
        if bad is None:
            grad16[0, 0], grad16[1, 1] = 65504.0, -65504.0  # float16's largest: a real step
        else:
            grad16[2, 3] = bad
        got, want = mixed(ctx, master, grad16, m, v, 7)
        what = "the largest finite float16" if bad is None else f"{'an' if bad == np.inf else 'a'} {bad} in the gradients"
        if bad is None:  # a real step: its master copy as in the check above
            expect_master(ctx, got[0], want[0], master)
        for i, name in ((0, "master"), (2, "m"), (3, "v")):
            try:
                ctx.expect_array(name, got[i], want[i], MIXED)
            except Fail as failure:
                trap = "skip-not-clean" if bad is not None else None
                raise Fail(f"With {what}: {failure.feedback.rstrip('.')}."
                           + (f" {QUESTION.trap(trap).explanation}" if trap else ""), trap) from None
        if not isinstance(got[4], (int, np.integer)) or got[4] != want[4]:
            raise Fail(f"With {what}, `t` from {MIXED} is {got[4]!r}, not {want[4]}."
                       + (f" {QUESTION.trap('skip-not-clean').explanation}" if bad is not None else ""),
                       "skip-not-clean" if bad is not None else None)
        expect_dtype("weight16", got[1])
        ctx.expect_array("weight16", got[1], want[1], MIXED, rtol=1e-3)


@QUESTION.check("bookkeeping: training FLOPs of a dense transformer", points=1, hints=(
    "How many FLOPs does one weight cost per token in a forward pass, and how many in the "
    "backward, which has two products to compute?",
))
def flops(ctx):
    for n_params, n_tokens in ((1.3e9, 2.6e10), (7e9, 2e12), (1e6, 1.0)):
        got = ctx.call(FLOPS, n_params, n_tokens)
        want = ctx.ref.training_flops(n_params, n_tokens)
        ctx.expect_array(f"training_flops({n_params:g}, {n_tokens:g})", got, np.asarray(want), FLOPS)


@QUESTION.check("bookkeeping: bytes per parameter, plain data parallel and ZeRO 1, 2, 3", points=2,
                hints=(
    "Count what each parameter holds in mixed precision with Adam: weights and gradients in 16 "
    "bits, and the optimizer's float32 state.",
    "Each stage shards one more of them over the GPUs: first the optimizer state, then the "
    "gradients, then the weights.",
))
def zero_bytes(ctx):
    for stage in range(4):
        for n_gpus in (1, 8, 64):
            got = ctx.call(BYTES, stage, n_gpus)
            want = ctx.ref.bytes_per_param(stage, n_gpus)
            ctx.expect_array(f"bytes_per_param({stage}, {n_gpus})", got, np.asarray(want), BYTES)


@QUESTION.check("inputs left unchanged (and the answers right)", points=1, hints=(
    "An optimizer in PyTorch updates its tensors in place; here, do your functions?",
    "Return new arrays for p, m and v; work on copies.",
))
def inputs_unchanged(ctx):
    p, g, m, v = probes.state(ctx.rng, 3)
    step_args = (p, g, m, v, 3, 0.01, *BETAS, EPS, 0.1, True)
    master, grad16, m16, v16 = probes.mixed_state(ctx.rng)
    mixed_args = (master, grad16, m16, v16, 2, 1e-4, *BETAS, EPS, 0.01, True)
    ctx.expect_inputs_unchanged([
        (STEP, step_args, ["p", "g", "m", "v"], ctx.ref.adamw_step(*step_args)),
        (MIXED, mixed_args, ["master", "grad16", "m", "v"], ctx.ref.mixed_precision_step(*mixed_args)),
    ])
