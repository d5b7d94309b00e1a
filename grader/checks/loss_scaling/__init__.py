"""Hidden checks for loss_scaling: dynamic loss scaling and global-norm clipping, in order.

A gradient set is a list of K arrays of any shapes (the model's tensors); the scaler's state
is ``(scale, growth_tracker)``. ``amp_step`` emulates a float16 backward of ``scale * loss``
as ``float16(scale * g)``, unscales in float64, skips on inf/NaN, clips by one global norm
and takes an SGD step. Nothing here is differentiated, so there are no finite differences:
every value is compared with the reference (``ctx.ref``, the solution notebook), run on the
same inputs, and a long run is compared step by step up to the first step that differs.

The known-wrong variants (traps) are built from the reference's own pieces (each tensor
clipped alone, the scaled gradients clipped, a coefficient read off the loss, a float16
unscale) on inputs drawn so that every variant lands far from the right answer and from
the others: norms of the tensors on both sides of max_norm, a loss below max_norm with a
large gradient and above it with a small one, gradients small enough to underflow float16.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.loss_scaling.probes import (clean_steps, hparams, overflow_steps, planted_run,
                                              scaled_set, tensor_shapes, with_norms)
from backprop_traps.grader.checks.loss_scaling.traps import (
    CLIP, FP16_MAX, STEP, TRAPS, UNSCALE, UPDATE, Steps, array_list, diagnose_clip,
    diagnose_update, same_list, unscaled_fp16)
from backprop_traps.grader.engine.context import same_answer
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("loss_scaling", "Dynamic loss scaling and gradient clipping, in the right order",
                    traps=TRAPS, difficulty="medium", kinks={
                        "fp16-overflow": "scale * g at float16's edge: 65504 is finite, a product "
                                         "that rounds to 65520 or more is inf",
                        "clip-threshold": "a global norm exactly max_norm (the coefficient is 1)",
                        "growth-interval": "the growth counter reaching growth_interval exactly"})




# -- update_scale ---------------------------------------------------------------------------
def _updates(ctx, cases):
    for args in cases:
        got = ctx.call(UPDATE, *args)
        diagnose_update(ctx, args, got, ctx.ref.update_scale(*args))


@QUESTION.check("update_scale: a step that overflowed, whatever the counter", points=1, hints=(
    "What must happen to the scale, and to the count of clean steps, on a step whose gradients overflowed?",
    "On an overflow the scale is multiplied by backoff_factor and the growth counter goes back "
    "to 0, whatever it was: the clean steps must be counted in a row.",
    "An overflow wins over growth: even with the counter one short of growth_interval, an "
    "overflow backs off and restarts the count.",
))
def update_backoff(ctx):
    t = int(ctx.rng.integers(2, 1998))
    _updates(ctx, [(65536.0, t, True, 2.0, 0.5, 2000), (1024.0, 1999, True, 2.0, 0.5, 2000),
                   (8.0, 2, True, 4.0, 0.25, 3), (65536.0, 0, True, 2.0, 0.5, 2000)])


@QUESTION.check("update_scale: the scale grows after growth_interval clean steps in a row", points=1,
                kinks=("growth-interval",), hints=(
    "Count the clean steps: after how many does the scale grow, and what is the counter then?",
    "A clean step adds 1 to the counter; when the counter reaches growth_interval the scale is "
    "multiplied by growth_factor and the counter restarts at 0.",
    "With growth_interval = 1 the scale grows on every clean step and the counter stays 0.",
))
def update_growth(ctx):
    t = int(ctx.rng.integers(1, 1998))
    _updates(ctx, [(65536.0, t, False, 2.0, 0.5, 2000), (65536.0, 0, False, 2.0, 0.5, 2000),
                   (65536.0, 1999, False, 2.0, 0.5, 2000), (1.0, 0, False, 2.0, 0.5, 1),
                   (3.0, 2, False, 4.0, 0.25, 3), (1000.0, 4, False, 1.5, 0.5, 5)])


@QUESTION.check("update_scale: the scale over a 40-step run", points=1, hints=(
    "Follow the scale by hand over a few steps with growth_interval = 3 and an overflow in between.",
    "The scale only grows after growth_interval clean steps in a row; any overflow restarts the count.",
    "Return the new (scale, growth_tracker) as numbers: a float and an int.",
))
def update_run(ctx):
    state, gf, bf, gi = (2.0 ** 16, 0), 2.0, 0.5, 3
    overflows = ctx.rng.random(40) < 0.2
    overflows[[5, 9, 10]], overflows[11:14] = True, False  # two overflows in a row, then a growth
    for step, found_inf in enumerate(overflows):
        args = (*state, bool(found_inf), gf, bf, gi)
        expected = ctx.ref.update_scale(*args)
        diagnose_update(ctx, args, ctx.call(UPDATE, *args), expected, step=step)
        state = expected


# -- unscale_grads --------------------------------------------------------------------------


@QUESTION.check("unscale_grads: divide by the scale in float64", points=1, hints=(
    "The scaled gradients are float16; what precision must the division happen in?",
    "Convert each float16 array to float64 first, then divide by the scale: the true gradients "
    "are often far below float16's smallest normal value (6.1e-5).",
    "Return one float64 array per tensor, in the same order and shapes.",
))
def unscale_values(ctx):
    for scale in (2.0 ** 16, 1000.0, 0.5):
        scaled = scaled_set(ctx.rng, tensor_shapes(ctx.rng))
        got = ctx.unpack(ctx.call(UNSCALE, scaled, scale), 2, UNSCALE, "grads, found_inf")[0]
        expected = ctx.ref.unscale_grads(scaled, scale)[0]
        got = array_list(ctx, "grads", got, expected, UNSCALE, finite=False, keep_dtype=True)
        if same_list(got, expected):
            continue
        if any(g.dtype == np.float16 for g in got) or any(
                same_list(got, form, rtol=2e-3) for form in unscaled_fp16(scaled, scale)):
            raise Fail(f"`grads` from {UNSCALE} is wrong (scale {scale:g}). "
                       f"{QUESTION.trap('unscale-in-fp16').explanation}", "unscale-in-fp16")
        if same_list(got, [s.astype(np.float64) * scale for s in scaled]):
            raise Fail(f"`grads` from {UNSCALE} is multiplied by the scale (scale {scale:g}): "
                       "unscaling divides by it.")
        raise Fail(f"`grads` from {UNSCALE} is wrong (scale {scale:g}): expected each float16 "
                   "array converted to float64 and divided by the scale.")


@QUESTION.check("unscale_grads: inf, -inf or NaN in any tensor is found", points=2, hints=(
    "Which values can a float16 backward produce when it overflows, and which does your check miss?",
    "found_inf is True when any entry of any tensor is not finite: +inf, -inf or NaN.",
    "Look at every tensor, not just the first; large finite values like 65504 are not an overflow.",
))
def unscale_nonfinite(ctx):
    shapes = tensor_shapes(ctx.rng, k=3)
    base = scaled_set(ctx.rng, shapes, -2.0, 4.0)
    base[0].flat[0] = FP16_MAX  # the largest finite float16 is not an overflow
    cases = [("every entry finite, one of them 65504", None, None)]
    cases += [("+inf in the last tensor only", 2, np.inf), ("-inf in the middle tensor", 1, -np.inf),
              ("NaN (and no inf) in one tensor", int(ctx.rng.integers(0, 3)), np.nan)]
    for what, k, value in cases:
        scaled = [g.copy() for g in base]
        if k is not None:
            scaled[k].flat[int(ctx.rng.integers(0, scaled[k].size))] = value
        got = ctx.unpack(ctx.call(UNSCALE, scaled, 2.0 ** 15), 2, UNSCALE, "grads, found_inf")[1]
        expected = ctx.ref.unscale_grads(scaled, 2.0 ** 15)[1]
        if not isinstance(got, (bool, int)) or got not in (0, 1):
            raise Fail(f"{UNSCALE} must return found_inf as True or False, not {got!r}")
        if bool(got) == expected:
            continue
        if what.startswith("NaN"):
            raise Fail(f"found_inf is False with {what}. {QUESTION.trap('nan-not-checked').explanation}",
                       "nan-not-checked")
        if expected:  # an overflow missed: the step built on this unscale goes ahead on inf
            raise Fail(f"found_inf is False with {what}; expected True. Check every entry of every "
                       "tensor, and both signs of inf: an amp_step built on this unscale_grads clips "
                       f"and applies that step. {QUESTION.trap('step-on-inf').explanation}", "step-on-inf")
        raise Fail(f"found_inf is True with {what}; expected False. Only non-finite values count as "
                   "an overflow.")


# -- clip_grad_norm -------------------------------------------------------------------------
def _clip(ctx, grads, max_norm, what):
    got = ctx.unpack(ctx.call(CLIP, grads, max_norm), 2, CLIP, "clipped, total_norm")
    clipped, total = ctx.ref.clip_grad_norm(grads, max_norm)
    diagnose_clip(ctx, grads, max_norm, got, (clipped, total), what)


@QUESTION.check("clip_grad_norm: several tensors, on both sides of max_norm", points=2, hints=(
    "Is the norm you compare with max_norm the norm of one tensor, or of all the gradients together?",
    "The total norm is the square root of the sum of the squares of every entry of every tensor; "
    "every tensor is then multiplied by the same coefficient, so the direction is kept.",
    "The coefficient is max_norm / (total_norm + 1e-6), never above 1.",
))
def clip_global(ctx):
    cases = [([2.0, 0.3, 0.9], 1.5, "one tensor above max_norm, two below"),
             ([4.0, 2.0], 1.0, "two tensors above max_norm by different amounts"),
             (list(ctx.rng.uniform(2.0, 8.0, size=4)), 5.0, "four tensors")]
    for norms, max_norm, what in cases:
        grads = with_norms(ctx.rng, tensor_shapes(ctx.rng, k=len(norms)), norms)
        _clip(ctx, grads, max_norm, what)


@QUESTION.check("clip_grad_norm: small, boundary and all-zero gradients", points=1, kinks=("clip-threshold",), hints=(
    "What should clipping do to gradients whose norm is already below max_norm?",
    "The coefficient is clamped at 1: clipping only ever shrinks. All-zero gradients have norm 0, "
    "and the + 1e-6 in the denominator keeps the coefficient finite.",
    "A single tensor is clipped the same way: its own norm is then the global norm.",
))
def clip_boundaries(ctx):
    shapes = tensor_shapes(ctx.rng, k=3)
    _clip(ctx, with_norms(ctx.rng, shapes, [0.2, 0.1, 0.3]), 1.0, "a total norm below max_norm")
    _clip(ctx, [np.array([3.0, 4.0]), np.zeros((2, 2))], 5.0, "a total norm exactly max_norm")
    _clip(ctx, [np.zeros(s) for s in shapes], 1.0, "all-zero gradients")
    _clip(ctx, with_norms(ctx.rng, shapes[:1], [7.0]), 2.0, "a single tensor")


# -- amp_step -------------------------------------------------------------------------------


@QUESTION.check("amp_step: a clean step unscales, clips, then updates", points=2, kinks=("fp16-overflow",), hints=(
    "Write the order down: scale, float16 backward, unscale, check, clip, step, update the scale. "
    "Which of them may see the scale still inside the gradients?",
    "Clip only the unscaled float64 gradients, by one norm over all tensors; the loss is only "
    "multiplied by the scale, never clipped.",
    "The new parameters are params - lr * clipped, and the scale is updated after the step.",
))
def step_clean(ctx):
    for params, grads, loss, state, hp, what in clean_steps(ctx.rng):
        Steps(ctx).check(params, grads, loss, state, hp, what)


@QUESTION.check("amp_step: steps whose float16 gradients overflow", points=2,
                kinks=("fp16-overflow",), hints=(
    "What must a step do when its float16 gradients hold inf or NaN?",
    "Such a step changes no parameter (skipped is True, clipped is None), and the scale backs "
    "off with its counter reset, so the next step tries again with a smaller scale.",
    "Emulate the float16 backward exactly: the product scale * g rounded to float16, which is "
    "inf above 65504; then look for inf and NaN in every tensor before clipping.",
))
def step_overflow(ctx):
    for params, grads, loss, state, hp, what in overflow_steps(ctx.rng):
        Steps(ctx).check(params, grads, loss, state, hp, what)


@QUESTION.check("amp_step: a 48-step run with planted overflows", points=2, hints=(
    "Run your step in a loop, feeding back its own state, and print the scale and skipped flag of each step.",
    "The scale should halve at every overflow and double after growth_interval clean steps in a row; "
    "skipped steps leave the parameters alone.",
    "Every step runs the same order: scale, float16 backward, unscale, check, skip or (clip, step), update.",
))
def step_run(ctx):
    steps = Steps(ctx)
    for params, grads, loss, state, hp, what in planted_run(ctx):
        steps.check(params, grads, loss, state, hp, what)


@QUESTION.check("inputs left unchanged", points=1, hints=(
    "Does any function change params, grads or the scaled gradients in place?",
    "An SGD update or a clip done with augmented assignment (minus-equals, times-equals) "
    "rewrites the caller's arrays.",
    "Build new arrays for the results: ordinary arithmetic on arrays returns a fresh one.",
))
def inputs_unchanged(ctx):
    shapes = tensor_shapes(ctx.rng, k=2)
    grads = with_norms(ctx.rng, shapes, [2.0, 1.0])
    params = [ctx.rng.standard_normal(s) for s in shapes]
    scaled = scaled_set(ctx.rng, shapes)
    unscaled = ctx.ref.unscale_grads(scaled, 4096.0)
    step = ctx.ref.amp_step(params, grads, 0.5, (4096.0, 1), hparams())

    def right(expected):  # a bool in the answer is compared apart: same_answer takes no bools
        return lambda got: (isinstance(got, (tuple, list)) and len(got) == len(expected)
                            and same_answer(list(got[:-1]), list(expected[:-1]))
                            and got[-1] in (0, 1) and bool(got[-1]) == expected[-1])

    ctx.expect_inputs_unchanged([
        (UNSCALE, (scaled, 4096.0), ["scaled_grads"], right(unscaled)),
        (CLIP, (grads, 1.0), ["grads"], ctx.ref.clip_grad_norm(grads, 1.0)),
        (STEP, (params, grads, 0.5, (4096.0, 1), hparams()), ["params", "grads"], right(step))])
