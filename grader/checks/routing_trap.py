"""Hidden checks for routing_trap: max pooling must cache where the max came from.

Shapes: x (N, C, H, W), window k, stride s, out (N, C, Ho, Wo). The reference is the
solution notebook (``ctx.ref``); the known-wrong variants below are the traps, computed
here on the same inputs so a wrong answer can be named. Some traps are named by where the
answer goes wrong, whatever the code looked like: ``lost-overlap`` when dx is right at every
input that lies in one window only and wrong only where windows overlap (fancy-index ``+=``,
a window's slice assigned, an average-pool backward written for stride == kernel), and
``tie-order`` when every differing argmax still names a tied maximum of its window.
Boundary inputs: k = 1, one window over the whole plane, a stride longer than the window,
planes of negative values only, and exact ties.
"""
from __future__ import annotations

import numpy as np

from grader.engine import feedback
from grader.engine.gradcheck import upstream
from grader.engine.question import Fail, Question, Trap

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
    Trap("tie-order", "On ties your argmax picks another of the tied maxima than the first one in "
         "row-major order (the last one, or the first one column by column); the rule (as in "
         "PyTorch) is the first maximum in row-major order: scan row by row, left to right, and "
         "replace the running max only when a value is strictly greater."),
    Trap("avg-unscaled", "Your average-pool backward forgets to divide by the window size: each "
         "input's share of an output is 1 / (k * k) of its gradient."),
    Trap("tie-split", "When several inputs tie for the max, your backward splits the gradient "
         "equally among them. The forward picked one winner (the first maximum) and the output "
         "moves with that input alone: route the whole gradient to the cached argmax."),
    Trap("argmax-in-window", "Your argmax is the position of the winner inside its k x k window "
         "(0 to k * k - 1). The backward gets no x and no window position, so it needs the flat "
         "index h * W + w of the winner in the whole (H, W) input plane: add the window's top-left "
         "corner (row i * stride, column j * stride) to the winner's row and column first."),
], difficulty="medium")


# -- input generators ------------------------------------------------------------------
def tie_free(rng, shape) -> np.ndarray:
    """Distinct values at least 1e-2 apart, so every window has one clear max and the
    derivative exists (finite differences move inputs by 1e-6 only)."""
    values = rng.permutation(int(np.prod(shape))).astype(np.float64) * 1e-2
    return (values - values.mean()).reshape(shape)


def with_ties(rng, shape) -> np.ndarray:
    """Small integers: nearly every window holds tied maxima."""
    return rng.integers(0, 3, size=shape).astype(np.float64)


def boundary_cases(rng):
    """(x, k, s) at the edges the contract allows: k = 1 (every input is its own window), one
    window covering the whole plane, a stride larger than the window (inputs no window reads),
    and planes of negative values only (a running max started at 0 never moves)."""
    return [(tie_free(rng, (2, 2, 4, 5)), 1, 1),
            (tie_free(rng, (2, 3, 5, 5)), 5, 1),
            (tie_free(rng, (1, 2, 8, 9)), 2, 3),
            (tie_free(rng, (2, 1, 6, 6)) - 10.0, 3, 3)]


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


def tie_broadcast(x, dout, k, s, split=False):
    """Every tied maximum gets the window's gradient (``split``: an equal share of it)."""
    dx = np.zeros_like(x)
    out = np.full(out_shape(x.shape, k, s), -np.inf)
    for win in _windows(x.shape, k, s):
        out = np.maximum(out, x[win])
    tied = sum((x[win] == out).astype(np.float64) for win in _windows(x.shape, k, s))
    for win in _windows(x.shape, k, s):
        dx[win] += (dout / tied if split else dout) * (x[win] == out)
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


def window_index(argmax, shape, k, s):
    """The cached flat index h * W + w turned into the index inside its window (dy * k + dx)."""
    w = shape[3]
    _, _, ho, wo = argmax.shape
    oy, ox = np.meshgrid(np.arange(ho) * s, np.arange(wo) * s, indexing="ij")
    return (argmax // w - oy) * k + (argmax % w - ox)


def ties_elsewhere(ctx, x, got, k, s) -> bool:
    """Behaviour of ``tie-order``: every argmax that differs from the reference still names a
    maximum of its own window (a tied one, just not the first in row-major order)."""
    ref_out, ref_arg = ctx.ref.maxpool2d_forward(x, k, s)
    got = np.asarray(got)
    if got.shape != ref_arg.shape or got.dtype.kind not in "iu" or not (got != ref_arg).any():
        return False
    n, c, h, w = x.shape
    _, _, ho, wo = ref_arg.shape
    oy, ox = np.meshgrid(np.arange(ho) * s, np.arange(wo) * s, indexing="ij")
    row, col = got // w, got % w
    inside = (got >= 0) & (got < h * w) & (row >= oy) & (row < oy + k) & (col >= ox) & (col < ox + k)
    if not inside.all():
        return False
    picked = np.take_along_axis(x.reshape(n, c, h * w), got.reshape(n, c, -1), axis=2)
    return bool(np.array_equal(picked.reshape(got.shape), ref_out))


# -- where a wrong answer differs, and the smallest example (feedback only) -------------
def coverage(shape, k, s) -> np.ndarray:
    """How many windows contain each input, (N, C, H, W)."""
    cov = np.zeros(shape)
    for win in _windows(shape, k, s):
        cov[win] += 1  # one slice has no repeated positions: plain += is exact
    return cov


def tied_losers(x, argmax, k, s) -> np.ndarray:
    """Inputs equal to the max of a window they are in without being its argmax (they get 0)."""
    w = x.shape[3]
    _, _, ho, wo = argmax.shape
    top = np.full(argmax.shape, -np.inf)
    for win in _windows(x.shape, k, s):
        top = np.maximum(top, x[win])
    oy, ox = np.meshgrid(np.arange(ho) * s, np.arange(wo) * s, indexing="ij")
    mask = np.zeros(x.shape, dtype=bool)
    for i, win in enumerate(_windows(x.shape, k, s)):
        dy, dx = divmod(i, k)
        mask[win] |= (x[win] == top) & (argmax != (oy + dy) * w + (ox + dx))
    return mask


def backward_regions(ctx, x, argmax, k, s) -> dict:
    won = ctx.ref.maxpool2d_backward(np.ones(argmax.shape), argmax, x.shape, k, s)  # wins per input
    return {"at inputs that won more than one window": won > 1,
            "at tied maxima that are not their window's first maximum": tied_losers(x, argmax, k, s),
            "where windows overlap": coverage(x.shape, k, s) > 1,
            "at inputs that won no window (they should get 0)": won == 0}


def _small_plane(rng, hw, ties=False):
    """A (1, 1, h, w) plane easy to read: distinct integers, or 0..2 when ties are wanted."""
    if ties:
        return with_ties(rng, (1, 1, *hw))
    return rng.permutation(hw[0] * hw[1]).astype(np.float64).reshape(1, 1, *hw)


def small_sizes(k, s, count=3):
    """Plane sizes (h, w), smallest first: 1, 2, 3 windows down, and square or one more across
    (a non-square plane catches swapped H and W)."""
    return [(k + i * s, k + (i + j) * s) for i in range(count) for j in (0, 1)]


def max_backward_example(ctx, k, s, ties=False):
    def build(rng, hw):
        x = _small_plane(rng, hw, ties)
        ctx.sandbox.call("maxpool2d_forward", x, k, s)  # a backward that peeks at a cached x sees this one
        _, argmax = ctx.ref.maxpool2d_forward(x, k, s)
        dout = rng.integers(1, 10, size=argmax.shape).astype(np.float64)
        args = {"dout": dout, "argmax": argmax, "input_shape": x.shape, "kernel_size": k, "stride": s}
        return args, {"x": x, "dout": dout, "argmax": argmax, "kernel_size": k, "stride": s}
    return lambda: ctx.smallest_failure("maxpool2d_backward", build, small_sizes(k, s),
                                        ctx.ref.maxpool2d_backward, name="dx")


def max_forward_example(ctx, k, s, part, ties=False):
    """``part`` 0 compares ``out``, 1 compares ``argmax``."""
    def build(rng, hw):
        return {"x": _small_plane(rng, hw, ties), "kernel_size": k, "stride": s}
    return lambda: ctx.smallest_failure(
        "maxpool2d_forward", build, small_sizes(k, s),
        lambda x, k_, s_: ctx.ref.maxpool2d_forward(x, k_, s_)[part], pick=lambda v: v[part],
        name=("out", "argmax")[part])


def avg_example(ctx, k, s, backward):
    def build(rng, hw):
        x = _small_plane(rng, hw)
        if not backward:
            return {"x": x, "kernel_size": k, "stride": s}
        dout = rng.integers(1, 10, size=out_shape(x.shape, k, s)).astype(np.float64)
        return {"dout": dout, "input_shape": x.shape, "kernel_size": k, "stride": s}
    fn = "avgpool2d_backward" if backward else "avgpool2d_forward"
    return lambda: ctx.smallest_failure(fn, build, small_sizes(k, s), getattr(ctx.ref, fn),
                                        name="dx" if backward else "out")


# -- checks ------------------------------------------------------------------------------
def overlap_lost(ctx, fn, got, right, shape, k, s, failure: Fail, avg=False) -> Fail | None:
    """``lost-overlap`` recognised by where it shows: ``got`` is right at every input that lies
    in one window only and wrong only where windows overlap, whatever the code looked like
    (fancy-index ``+=``, assigning a window's whole slice, an overwrite in a loop)."""
    if failure.trap is not None or not feedback.differs_only_in(got, right, coverage(shape, k, s) > 1):
        return None
    if avg:
        why = ("each input must receive a share from every window that contains it, added up; yours "
               "keeps one window's share. Assigning a window's slice (as if the stride were the window "
               "size) overwrites the shares already there: add into the slice instead.")
    else:
        why = QUESTION.trap("lost-overlap").explanation
    details = failure.feedback.partition("\n")[2]
    return Fail(f"`dx` from {fn} is right wherever an input lies in one window only, and wrong only "
                f"where windows overlap (k={k}, stride={s}). {why}" + (f"\n{details}" if details else ""),
                "lost-overlap")


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
        ctx.expect_gradient("dx", dx, f, x, dout, "maxpool2d_backward", traps=traps, reference=right,
                            regions=lambda: backward_regions(ctx, x, argmax, k, s),
                            example=max_backward_example(ctx, k, s))
    except Fail as failure:
        raise overlap_lost(ctx, "maxpool2d_backward", dx, right, x.shape, k, s, failure) or failure


def _max_forward(ctx, x, k, s):
    out, argmax = ctx.unpack(ctx.call("maxpool2d_forward", x, k, s), 2, "maxpool2d_forward", "out, argmax")
    ref_out, ref_arg = ctx.ref.maxpool2d_forward(x, k, s)
    top = np.full(ref_out.shape, -np.inf)
    for win in _windows(x.shape, k, s):
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


@QUESTION.check("max-pool forward: a tie goes to the first maximum", points=1, hints=(
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
    tied = sum((x[win] == ref_out).astype(int) for win in _windows(x.shape, 3, 1)) > 1
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


@QUESTION.check("overlapping windows accumulate (k=3, s=2 and k=3, s=1)", points=2, hints=(
    "With stride < kernel size, windows share inputs: one input can be the max of several windows.",
    "An input that wins several windows must receive the sum of their gradients, not just the "
    "last one written.",
    "In numpy, `a[idx] += v` with repeated indices in idx applies only one of the additions; "
    "accumulate without buffering (np.add.at, or np.bincount with weights) or with a loop that adds.",
))
def backward_overlap(ctx):
    for s in (2, 1):
        _max_backward(ctx, tie_free(ctx.rng, (2, 2, 9, 9)), 3, s, traps_for=("lost-overlap",))


@QUESTION.check("max-pool backward routes a tie to one input only", points=1, hints=(
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
                                "avgpool2d_backward", traps={"avg-unscaled": correct * k * k},
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
