"""Hidden checks for routing_trap: max pooling must cache where the max came from.

Shapes: x (N, C, H, W), window k, stride s, out (N, C, Ho, Wo). The reference is the
solution notebook (``ctx.ref``); the known-wrong variants (``traps.py``) are computed on
the same inputs so a wrong answer can be named. Some traps are named by where the
answer goes wrong, whatever the code looked like: ``lost-overlap`` when dx is right at every
input that lies in one window only and wrong only where windows overlap (fancy-index ``+=``,
a window's slice assigned, an average-pool backward written for stride == kernel), and
``tie-order`` when every differing argmax still names a tied maximum of its window.
Boundary inputs: k = 1, one window over the whole plane, a stride longer than the window,
planes of negative values only, and exact ties.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.routing_trap.probes import (avg_example, backward_regions, boundary_cases, coverage,
                                               max_backward_example, max_forward_example, out_shape,
                                               tie_free, windows, with_ties)
from backprop_traps.grader.checks.routing_trap.traps import (TRAPS, last_max_argmax, lost_overlap, overlap_lost,
                                              tie_broadcast, ties_elsewhere, window_index)
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("routing_trap", "Max pooling must cache where the max came from", traps=TRAPS,
                    difficulty="medium",
                    kinks={"tie": "a window whose maximum appears more than once (the first one wins)"},
                    axes={name: ("example n", "channel c", "row", "column") for name in ("dx", "out", "argmax")})


# -- checks ------------------------------------------------------------------------------
def _max_backward(ctx, x, k, s, traps_for=()):
    """Call the learner's backward with the reference argmax; check against finite differences."""
    out, argmax = ctx.ref.maxpool2d_forward(x, k, s)
    dout = upstream(ctx.rng, out.shape)
    dx = ctx.call("maxpool2d_backward", dout, argmax, x.shape, k, s)
    traps = {"avg-routing": ctx.ref.avgpool2d_backward(dout, x.shape, k, s)}
    if "lost-overlap" in traps_for:
        traps["lost-overlap"] = lost_overlap(dout, argmax, x.shape, k, s)
    right = ctx.ref.maxpool2d_backward(dout, argmax, x.shape, k, s)
    f = lambda z: ctx.ref.maxpool2d_forward(z, k, s)[0]  # noqa: E731
    try:
        ctx.expect_gradient("dx", dx, f, x, dout, "maxpool2d_backward", traps=traps, reference=right, rows=True,
                            regions=lambda: backward_regions(ctx, x, argmax, k, s),
                            example=max_backward_example(ctx, k, s))
    except Fail as failure:
        raise overlap_lost(ctx, "maxpool2d_backward", dx, right, x.shape, k, s, failure) or failure


def _max_forward(ctx, x, k, s):
    out, argmax = ctx.unpack(ctx.call("maxpool2d_forward", x, k, s), 2, "maxpool2d_forward", "out, argmax")
    ref_out, ref_arg = ctx.ref.maxpool2d_forward(x, k, s)
    top = np.full(ref_out.shape, -np.inf)
    for win in windows(x.shape, k, s):
        top = np.maximum(top, x[win])
    ctx.expect_array("out", out, ref_out, "maxpool2d_forward", example=max_forward_example(ctx, k, s, 0),
                     regions={"in windows whose values are all negative": top < 0})
    argmax = ctx.as_array("argmax", argmax, ref_arg, "maxpool2d_forward", integer=True)
    if argmax.dtype != np.int64:
        raise Fail(f"`argmax` must be int64 (flat indices h * W + w), not {argmax.dtype}")
    ctx.expect_array("argmax", argmax, ref_arg, "maxpool2d_forward", integer=True,
                     traps={"argmax-in-window": window_index(ref_arg, x.shape, k, s)},
                     example=max_forward_example(ctx, k, s, 1))


@QUESTION.check("max-pool forward: values and the argmax format", points=2, hints=(
    "Slide a k x k window with step `stride` over each (H, W) plane; each output is the largest "
    "value of its window, and Ho = (H - k) // stride + 1.",
    "argmax is not the position inside the window: it is the flat index h * W + w of the winner "
    "in the whole (H, W) input plane, as int64.",
    "Work one window by hand: the window of output (i, j) starts at row i * stride and column "
    "j * stride; turn its winner's (row, column) into row * W + column.",
))
def forward_values(ctx):
    _max_forward(ctx, tie_free(ctx.rng, (2, 3, 8, 10)), 2, 2)
    for x, k, s in boundary_cases(ctx.rng):
        _max_forward(ctx, x, k, s)


@QUESTION.check("max-pool forward: windows with tied maxima", points=1, kinks=("tie",), hints=(
    "When a window holds its maximum twice, which of the two did your forward keep?",
    "The rule (as in PyTorch) is the first maximum in row-major order: row by row, left to right.",
    "np.argmax over a flattened window already returns the first maximum; a hand-written scan must "
    "replace the running max only when a value is strictly greater (>, not >=).",
))
def forward_ties(ctx):
    x = with_ties(ctx.rng, (2, 2, 7, 7))
    _, argmax = ctx.unpack(ctx.call("maxpool2d_forward", x, 3, 1), 2,
                           "maxpool2d_forward", "out, argmax")
    ref_out, ref_arg = ctx.ref.maxpool2d_forward(x, 3, 1)
    argmax = ctx.as_array("argmax", argmax, ref_arg, "maxpool2d_forward", integer=True)
    if np.array_equal(argmax, ref_arg):
        return
    tied = sum((x[win] == ref_out).astype(int) for win in windows(x.shape, 3, 1)) > 1
    if ties_elsewhere(ctx, x, argmax, 3, 1):
        count = int(np.sum(argmax != ref_arg))
        named = ctx.mismatch("argmax", argmax, ref_arg, "maxpool2d_forward", trap="tie-order",
                             regions={"in windows whose maximum is tied": tied},
                             example=max_forward_example(ctx, 3, 1, 1, ties=True))
        raise Fail(f"In {count} windows with a tied maximum, the `argmax` from maxpool2d_forward names "
                   f"one of the tied maxima, but not the first. {named.feedback}", "tie-order")
    raise ctx.mismatch("argmax", argmax, ref_arg, "maxpool2d_forward",
                       traps={"tie-order": last_max_argmax(x, 3, 1),
                              "argmax-in-window": window_index(ref_arg, x.shape, 3, 1)},
                       regions={"in windows whose maximum is tied": tied},
                       example=max_forward_example(ctx, 3, 1, 1, ties=True))


@QUESTION.check("max-pool backward matches finite differences", points=2, hints=(
    "Nudge one input of a window by a tiny amount: does the window's output move if that input "
    "was not the maximum?",
    "Only the input that won the max receives its window's upstream gradient; every other input "
    "of the window gets 0 from it.",
    "The backward gets no x: the cached argmax names each window's winner, so start dx at zeros "
    "and send each dout value to the position its argmax names.",
))
def backward_gradcheck(ctx):
    _max_backward(ctx, tie_free(ctx.rng, (1, 2, 6, 8)), 2, 2)
    _max_backward(ctx, tie_free(ctx.rng, (2, 3, 16, 16)), 2, 2)
    for x, k, s in boundary_cases(ctx.rng):
        _max_backward(ctx, x, k, s, traps_for=("lost-overlap",))


@QUESTION.check("max-pool backward: overlapping windows (k=3, s=2 and k=3, s=1)", points=2, hints=(
    "With stride < kernel size, windows share inputs: one input can be the max of several windows.",
    "An input that wins several windows must receive the sum of their gradients, not just the "
    "last one written.",
    "In numpy, `a[idx] += v` with repeated indices in idx applies only one of the additions; "
    "accumulate without buffering (np.add.at, or np.bincount with weights) or with a loop that adds.",
))
def backward_overlap(ctx):
    for s in (2, 1):
        _max_backward(ctx, tie_free(ctx.rng, (2, 2, 9, 9)), 3, s, traps_for=("lost-overlap",))


@QUESTION.check("max-pool backward: windows with tied maxima", points=1, kinks=("tie",), hints=(
    "How many inputs should receive a window's gradient when several of them tie for the max?",
    "Exactly one: the input the forward recorded in argmax (the first maximum), not every input "
    "equal to the maximum, and not an equal share for each.",
    "The backward receives argmax, not x. If yours finds the max again by comparing values, it "
    "hands the gradient to every tie; route by argmax alone.",
))
def backward_ties(ctx):
    x = with_ties(ctx.rng, (2, 2, 6, 6))
    k, s = 2, 2
    # A backward that peeks at an x cached by the forward sees this one; whatever the forward
    # does here is graded by the forward's own checks, not this one.
    ctx.sandbox.call("maxpool2d_forward", x, k, s)
    _, argmax = ctx.ref.maxpool2d_forward(x, k, s)
    dout = upstream(ctx.rng, argmax.shape)
    dx = ctx.call("maxpool2d_backward", dout, argmax, x.shape, k, s)
    ctx.expect_array("dx", dx, ctx.ref.maxpool2d_backward(dout, argmax, x.shape, k, s),
                     "maxpool2d_backward", traps={
                         "tie-broadcast": tie_broadcast(x, dout, k, s),
                         "tie-split": tie_broadcast(x, dout, k, s, split=True),
                         "avg-routing": ctx.ref.avgpool2d_backward(dout, x.shape, k, s)},
                     regions=lambda: backward_regions(ctx, x, argmax, k, s),
                     example=max_backward_example(ctx, k, s, ties=True))


@QUESTION.check("max pooling forward and backward: non-square planes, N and C > 1", points=1, hints=(
    "Are H and W swapped anywhere, e.g. in the output shape or in a reshape?",
    "The flat index is h * W + w with the input's width W, not the output's width Wo or the height H.",
    "Work a 1 x 1 x 3 x 5 input by hand and compare your shapes and indices with it.",
))
def non_square(ctx):
    x = tie_free(ctx.rng, (3, 4, 7, 12))
    _max_forward(ctx, x, 3, 2)
    _max_backward(ctx, x, 3, 2, traps_for=("lost-overlap",))


@QUESTION.check("average pooling forward and backward", points=2, hints=(
    "Every input of a window contributes equally to that window's mean.",
    "The derivative of the mean of k * k values with respect to one of them is 1 / (k * k).",
    "Each input gets dout / (k * k) from every window that contains it; where windows overlap, "
    "those shares add up.",
))
def average_pooling(ctx):
    x = tie_free(ctx.rng, (2, 3, 7, 9))
    for k, s in ((2, 2), (3, 2), (1, 1), (3, 1)):
        out = ctx.call("avgpool2d_forward", x, k, s)
        ctx.expect_array("out", out, ctx.ref.avgpool2d_forward(x, k, s), "avgpool2d_forward",
                         example=avg_example(ctx, k, s, backward=False),
                         counts={"k * k, the window size": k * k})
        dout = upstream(ctx.rng, out_shape(x.shape, k, s))
        dx = ctx.call("avgpool2d_backward", dout, x.shape, k, s)
        correct = ctx.ref.avgpool2d_backward(dout, x.shape, k, s)
        try:
            ctx.expect_gradient("dx", dx, lambda z: ctx.ref.avgpool2d_forward(z, k, s), x, dout,
                                "avgpool2d_backward", traps={"avg-unscaled": correct * k * k}, rows=True,
                                reference=correct, counts={"k * k, the window size": k * k},
                                regions={"where windows overlap": coverage(x.shape, k, s) > 1},
                                example=avg_example(ctx, k, s, backward=True))
        except Fail as failure:
            raise overlap_lost(ctx, "avgpool2d_backward", dx, correct, x.shape, k, s, failure,
                               avg=True) or failure


@QUESTION.check("inputs left unchanged", points=1, hints=(
    "Does any of your functions assign into `x`, `dout` or `argmax`, or change them in place "
    "(+=, out=...)?",
    "A reshape often returns a view that shares memory: writing into `x.reshape(...)` writes into `x`.",
    "Build results in fresh arrays (np.zeros for dx) or copy an input before changing it.",
))
def inputs_unchanged(ctx):
    x = tie_free(ctx.rng, (2, 2, 6, 6))
    out, argmax = ctx.ref.maxpool2d_forward(x, 3, 1)
    dout = upstream(ctx.rng, out.shape)
    calls = [("maxpool2d_forward", (x, 3, 1), ["x"]),
             ("maxpool2d_backward", (dout, argmax, x.shape, 3, 1), ["dout", "argmax"]),
             ("avgpool2d_forward", (x, 3, 1), ["x"]),
             ("avgpool2d_backward", (dout, x.shape, 3, 1), ["dout"])]
    ctx.expect_inputs_unchanged([(fn, args, names, getattr(ctx.ref, fn)(*args))
                                 for fn, args, names in calls])
