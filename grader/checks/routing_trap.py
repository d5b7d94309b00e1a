"""Hidden checks for routing_trap: max pooling must cache where the max came from.

Shapes: x (N, C, H, W), window k, stride s, out (N, C, Ho, Wo). The reference is the
solution notebook (``ctx.ref``); the known-wrong variants below are the traps, computed
here on the same inputs so a wrong answer can be named.
"""
from __future__ import annotations

import numpy as np

from grader.gradcheck import upstream
from grader.question import Question, Trap

QUESTION = Question("routing_trap", "Max pooling must cache where the max came from", traps=[
    Trap("avg-routing", "Your max-pool backward spreads each upstream gradient over the whole "
         "window, as average pooling does. Only the input that won the max affected the output, "
         "so route each gradient to the cached argmax position alone."),
    Trap("lost-overlap", "Where windows overlap, one input can win several windows and must "
         "receive the sum of their gradients; yours keeps only one. Fancy-index assignment or "
         "`dx[idx] += g` with repeated indices overwrites; accumulate instead (e.g. np.add.at)."),
    Trap("tie-broadcast", "When several inputs tie for the max, your backward copies the gradient "
         "to every one of them, so the gradient is counted several times. Route it only to the "
         "cached argmax (the first maximum)."),
    Trap("tie-order", "On ties your argmax picks the last maximum in the window; the rule (as in "
         "PyTorch) is the first maximum in row-major order. Only replace the running max when a "
         "value is strictly greater."),
    Trap("avg-unscaled", "Your average-pool backward forgets to divide by the window size: each "
         "input's share of an output is 1 / (k * k) of its gradient."),
])


# -- input generators ------------------------------------------------------------------
def tie_free(rng, shape) -> np.ndarray:
    """Distinct values at least 1e-2 apart, so every window has one clear max and the
    derivative exists (finite differences move inputs by 1e-6 only)."""
    values = rng.permutation(int(np.prod(shape))).astype(np.float64) * 1e-2
    return (values - values.mean()).reshape(shape)


def with_ties(rng, shape) -> np.ndarray:
    """Small integers: nearly every window holds tied maxima."""
    return rng.integers(0, 3, size=shape).astype(np.float64)


def out_shape(shape, k, s):
    n, c, h, w = shape
    return (n, c, (h - k) // s + 1, (w - k) // s + 1)


# -- the known-wrong variants (traps) ---------------------------------------------------
def _windows(shape, k, s):
    """Yield (dy, dx) offsets with the slices of the input they touch for every output."""
    _, _, ho, wo = out_shape(shape, k, s)
    for dy in range(k):
        for dx in range(k):
            yield np.s_[:, :, dy:dy + s * (ho - 1) + 1:s, dx:dx + s * (wo - 1) + 1:s]


def lost_overlap(dout, argmax, shape, k, s):
    n, c, h, w = shape
    dx = np.zeros((n, c, h * w))
    ni, ci = np.meshgrid(np.arange(n), np.arange(c), indexing="ij")
    dx[ni[..., None, None], ci[..., None, None], argmax] += dout  # buffered: repeats overwrite
    return dx.reshape(shape)


def tie_broadcast(x, dout, k, s):
    dx = np.zeros_like(x)
    out = np.full(out_shape(x.shape, k, s), -np.inf)
    for win in _windows(x.shape, k, s):
        out = np.maximum(out, x[win])
    for win in _windows(x.shape, k, s):
        dx[win] += dout * (x[win] == out)
    return dx


def last_max_argmax(x, k, s):
    h, w = x.shape[2:]
    best = np.full(out_shape(x.shape, k, s), -np.inf)
    arg = np.zeros(best.shape, dtype=np.int64)
    _, _, ho, wo = best.shape
    oy, ox = np.meshgrid(np.arange(ho) * s, np.arange(wo) * s, indexing="ij")
    for dy in range(k):
        for dx in range(k):
            vals = x[:, :, dy:dy + s * (ho - 1) + 1:s, dx:dx + s * (wo - 1) + 1:s]
            take = vals >= best
            best = np.where(take, vals, best)
            arg = np.where(take, (oy + dy) * w + (ox + dx), arg)
    return arg


# -- checks ------------------------------------------------------------------------------
def _max_backward(ctx, x, k, s, traps_for=()):
    """Call the learner's backward with the reference argmax; check against finite differences."""
    out, argmax = ctx.ref.maxpool2d_forward(x, k, s)
    dout = upstream(ctx.rng, out.shape)
    dx = ctx.call("maxpool2d_backward", dout, argmax, x.shape, k, s)
    traps = {"avg-routing": ctx.ref.avgpool2d_backward(dout, x.shape, k, s)}
    if "lost-overlap" in traps_for:
        traps["lost-overlap"] = lost_overlap(dout, argmax, x.shape, k, s)
    f = lambda z: ctx.ref.maxpool2d_forward(z, k, s)[0]  # noqa: E731
    ctx.expect_gradient("dx", dx, f, x, dout, "maxpool2d_backward", traps=traps)


@QUESTION.check("max-pool forward: values and the argmax format", points=2, hints=(
    "Slide a k x k window with step `stride`; each output is the window's largest value.",
    "argmax is a flat index into the (H, W) input plane: h * W + w, as int64.",
))
def forward_values(ctx):
    x = tie_free(ctx.rng, (2, 3, 8, 10))
    out, argmax = ctx.unpack(ctx.call("maxpool2d_forward", x, 2, 2), 2,
                             "maxpool2d_forward", "out, argmax")
    ref_out, ref_arg = ctx.ref.maxpool2d_forward(x, 2, 2)
    ctx.expect_array("out", out, ref_out, "maxpool2d_forward")
    argmax = ctx.as_array("argmax", argmax, ref_arg, "maxpool2d_forward", integer=True)
    if argmax.dtype != np.int64:
        from grader.question import Fail
        raise Fail(f"`argmax` must be int64 (flat indices h * W + w), not {argmax.dtype}")
    ctx.expect_array("argmax", argmax, ref_arg, "maxpool2d_forward", integer=True)


@QUESTION.check("max-pool forward: a tie goes to the first maximum", points=1, hints=(
    "With equal values in a window, which one did you keep?",
    "Scan the window in row-major order and replace the running max only when strictly greater.",
))
def forward_ties(ctx):
    x = with_ties(ctx.rng, (2, 2, 7, 7))
    _, argmax = ctx.unpack(ctx.call("maxpool2d_forward", x, 3, 1), 2,
                           "maxpool2d_forward", "out, argmax")
    _, ref_arg = ctx.ref.maxpool2d_forward(x, 3, 1)
    ctx.expect_array("argmax", argmax, ref_arg, "maxpool2d_forward", integer=True,
                     traps={"tie-order": last_max_argmax(x, 3, 1)})


@QUESTION.check("max-pool backward matches finite differences", points=2, hints=(
    "Only the input that won the max changes the output when nudged.",
    "Use the cached argmax: it tells you exactly where each upstream gradient goes.",
))
def backward_gradcheck(ctx):
    _max_backward(ctx, tie_free(ctx.rng, (1, 2, 6, 8)), 2, 2)
    _max_backward(ctx, tie_free(ctx.rng, (2, 3, 16, 16)), 2, 2)


@QUESTION.check("overlapping windows accumulate (k=3, s=2 and k=3, s=1)", points=2, hints=(
    "With stride < kernel, one input can be the max of several windows.",
    "Its gradient is the sum over every window it won; make sure repeated indices add up.",
))
def backward_overlap(ctx):
    for s in (2, 1):
        _max_backward(ctx, tie_free(ctx.rng, (2, 2, 9, 9)), 3, s, traps_for=("lost-overlap",))


@QUESTION.check("max-pool backward routes a tie to one input only", points=1, hints=(
    "How many inputs should receive a window's gradient when several tie?",
    "The backward receives only argmax: use it and nothing else.",
))
def backward_ties(ctx):
    x = with_ties(ctx.rng, (2, 2, 6, 6))
    k, s = 2, 2
    ctx.call("maxpool2d_forward", x, k, s)  # a backward that peeks at a cached x sees this one
    _, argmax = ctx.ref.maxpool2d_forward(x, k, s)
    dout = upstream(ctx.rng, argmax.shape)
    dx = ctx.call("maxpool2d_backward", dout, argmax, x.shape, k, s)
    ctx.expect_array("dx", dx, ctx.ref.maxpool2d_backward(dout, argmax, x.shape, k, s),
                     "maxpool2d_backward", traps={
                         "tie-broadcast": tie_broadcast(x, dout, k, s),
                         "avg-routing": ctx.ref.avgpool2d_backward(dout, x.shape, k, s)})


@QUESTION.check("non-square planes, N and C > 1", points=1, hints=(
    "Are H and W swapped anywhere? Is the flat index h * W + w with the input's W?",
))
def non_square(ctx):
    x = tie_free(ctx.rng, (3, 4, 7, 12))
    out, argmax = ctx.unpack(ctx.call("maxpool2d_forward", x, 3, 2), 2,
                             "maxpool2d_forward", "out, argmax")
    ref_out, ref_arg = ctx.ref.maxpool2d_forward(x, 3, 2)
    ctx.expect_array("out", out, ref_out, "maxpool2d_forward")
    ctx.expect_array("argmax", argmax, ref_arg, "maxpool2d_forward", integer=True)
    _max_backward(ctx, x, 3, 2, traps_for=("lost-overlap",))


@QUESTION.check("average pooling forward and backward", points=2, hints=(
    "Every input in a window contributes equally to that window's mean.",
    "Each input gets dout / (k * k) from every window that contains it.",
))
def average_pooling(ctx):
    x = tie_free(ctx.rng, (2, 3, 7, 9))
    for k, s in ((2, 2), (3, 2)):
        out = ctx.call("avgpool2d_forward", x, k, s)
        ctx.expect_array("out", out, ctx.ref.avgpool2d_forward(x, k, s), "avgpool2d_forward")
        dout = upstream(ctx.rng, out_shape(x.shape, k, s))
        dx = ctx.call("avgpool2d_backward", dout, x.shape, k, s)
        correct = ctx.ref.avgpool2d_backward(dout, x.shape, k, s)
        ctx.expect_gradient("dx", dx, lambda z: ctx.ref.avgpool2d_forward(z, k, s), x, dout,
                            "avgpool2d_backward", traps={"avg-unscaled": correct * k * k})


@QUESTION.check("inputs left unchanged", points=1, hints=(
    "Does any of your functions assign into `x`, `dout` or `argmax`?",
))
def inputs_unchanged(ctx):
    x = tie_free(ctx.rng, (2, 2, 6, 6))
    out, argmax = ctx.ref.maxpool2d_forward(x, 3, 1)
    dout = upstream(ctx.rng, out.shape)
    calls = [("maxpool2d_forward", (x, 3, 1), ["x"]),
             ("maxpool2d_backward", (dout, argmax, x.shape, 3, 1), ["dout", "argmax"]),
             ("avgpool2d_forward", (x, 3, 1), ["x"]),
             ("avgpool2d_backward", (dout, x.shape, 3, 1), ["dout"])]
    for fn, args, names in calls:
        result = ctx.call(fn, *args, echo_args=True)
        ctx.expect_unchanged(fn, result, list(args), names)
