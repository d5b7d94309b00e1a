"""Hidden checks for straight_through: fake quantisation with a straight-through backward.

Shapes: x, dout, out, dx all of one shape (any); scale > 0 a float (the grid step),
qmin <= 0 <= qmax ints. The true derivative of the forward is 0 almost everywhere, so the
backward is checked against finite differences of the SURROGATE clip(x, scale * qmin,
scale * qmax), whose ends are read off the reference forward (``ctx.ref``), and against the
reference backward at the exact ends of the range, where the surrogate has a kink. The
known-wrong variants below are the traps, computed here on the same inputs so a wrong
answer can be named.

Inputs are drawn in grid units u = x / scale and kept (by MARGIN steps) away from rounding
ties u = k + 1/2, from the ends qmin and qmax, and out of the half steps just outside each
end, where PyTorch's mask (taken after rounding) and this question's (taken before) differ.
Only the tie check and the ends check sit on those points, with power-of-two steps so that
x / scale is exact.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Question, Trap

FWD, BWD = "fake_quant_forward", "fake_quant_backward"
MARGIN = 0.02  # grid steps; the torch oracle's float32 scale moves x / scale by ~1e-7 * |u|

QUESTION = Question("straight_through", "Fake quantisation: a gradient that skips round() on purpose", traps=[
    Trap("zero-gradient", "Your backward returns zeros: the true derivative of round, which is 0 "
         "on every flat step of the staircase. That is correct calculus and a useless gradient, "
         "since nothing in front of the quantiser would ever learn. The straight-through estimator "
         "treats round as the identity in the backward pass: pass dout through unchanged wherever "
         "x / scale lies in [qmin, qmax]."),
    Trap("no-clip", "Your backward passes the upstream gradient everywhere, also where the forward "
         "clipped x / scale to qmin or qmax. There the output does not move when x moves, in the "
         "real forward and in its surrogate clip(x, scale * qmin, scale * qmax) alike: set the "
         "gradient to 0 where x / scale is below qmin or above qmax (the ends themselves count "
         "as inside)."),
    Trap("round-half-up", "Your forward rounds ties (x / scale exactly halfway between two "
         "integers) up or away from zero. The rule, as in np.round, torch.round and PyTorch's "
         "fake_quantize, is round half to even: 0.5 goes to 0, 1.5 and 2.5 to 2, -2.5 to -2."),
], difficulty="medium", kinks={
    "round-half": "x / scale exactly halfway between two integers (ties round half to even)",
    "range-ends": "x / scale exactly qmin or qmax (inside: the gradient passes)"})


# -- input generators (grid units u = x / scale) -----------------------------------------
def _bad(u, qmin, qmax, margin):
    """Too close to a tie or an end, or inside a half step just outside the range."""
    tie = np.abs(u - np.floor(u) - 0.5) < margin
    low = (u > qmin - 0.5 - margin) & (u < qmin + margin)
    high = (u > qmax - margin) & (u < qmax + 0.5 + margin)
    return tie | low | high


def grid_units(rng, shape, qmin, qmax, outside=0.3, margin=MARGIN):
    """u of ``shape``: a fraction ``outside`` beyond the range (by up to 3 steps or a third of
    its width), the rest inside, none near a tie or an end (see the module docstring)."""
    size = int(np.prod(shape))
    reach = max(3.0, (qmax - qmin) / 3)
    u = np.empty(size)
    todo = np.ones(size, dtype=bool)
    while todo.any():
        n = int(todo.sum())
        beyond = rng.uniform(0.5, reach, size=n) * rng.choice([-1.0, 1.0], size=n)
        beyond += np.where(beyond < 0, qmin, qmax)
        u[todo] = np.where(rng.random(n) < outside, beyond, rng.uniform(qmin, qmax, size=n))
        todo = _bad(u, qmin, qmax, margin)
    return u.reshape(shape)


def draw(rng, shape, scale, qmin, qmax, outside=0.3):
    return grid_units(rng, shape, qmin, qmax, outside) * scale


def readable(rng, n, scale=0.5, qmin=-4, qmax=3):
    """A short x a learner can work through by hand: few decimals, no ties, some clipped."""
    pool = [k + f for k in range(qmin, qmax + 1) for f in (-0.4, -0.2, 0.0, 0.2, 0.4)
            if qmin <= k + f <= qmax] + [qmin - 1.4, qmin - 3.2, qmax + 1.2, qmax + 4.4]
    return np.round(rng.choice(pool, size=n) * scale, 6)


# -- the reference, read through ctx.ref ------------------------------------------------------
def surrogate(ctx, scale, qmin, qmax):
    """clip(x, scale * qmin, scale * qmax), its ends read off the reference forward."""
    far = 4.0 * (abs(qmin) + abs(qmax) + 1) * scale
    lo, hi = ctx.ref.fake_quant_forward(np.array([-far, far]), scale, qmin, qmax)
    return lambda z: np.clip(z, lo, hi)


def regions(x, scale, qmin, qmax) -> dict:
    """Where a wrong answer may differ, most specific first (feedback only)."""
    u = x / scale
    return {"at the exact ends x / scale = qmin or qmax (they count as inside)": (u == qmin) | (u == qmax),
            "where x / scale is outside [qmin, qmax], where the forward clips": (u < qmin) | (u > qmax),
            "where x / scale is inside [qmin, qmax]": (u >= qmin) & (u <= qmax)}


# -- the known-wrong variants (traps) -----------------------------------------------------------
def backward_traps(ctx, dout) -> dict:
    """The wrong backwards this ``dout`` would give; no-clip only for a backward that passes the
    gradient far beyond the range too (one that blocks it there clips, in the wrong units or at
    the wrong place, and equals dout on these inputs by chance of their scale)."""
    traps = {"zero-gradient": np.zeros_like(dout)}
    if not blocks_far_outside(ctx):
        traps["no-clip"] = dout
    return traps


def blocks_far_outside(ctx) -> bool:
    """Whether the learner's backward gives 0 at x a thousand grid steps (and units of x) beyond
    either end, where every clip, in grid steps or in the units of x, is active. Asked once a
    check: its backward runs several times, and the answer is the same each time."""
    known = getattr(ctx, "_blocks_far_outside", None)
    if known is None:
        x, scale, qmin, qmax = np.array([-2e3, 2e3]), 2.0, -4, 3
        result = ctx.sandbox.call(BWD, np.ones(2), x, scale, qmin, qmax)
        value = result.value if result.ok else None
        known = isinstance(value, np.ndarray) and value.shape == (2,) and value.dtype.kind == "f" \
            and bool(np.all(value == 0))
        ctx._blocks_far_outside = known
    return known


def rounded_ties_up(x, scale, qmin, qmax, away_from_zero):
    u = x / scale
    q = np.sign(u) * np.floor(np.abs(u) + 0.5) if away_from_zero else np.floor(u + 0.5)
    return np.clip(q, qmin, qmax) * scale


# -- small examples for the feedback ------------------------------------------------------------
def forward_example(ctx, tie_values=False):
    def build(rng, n):
        x = (rng.integers(-9, 8, size=n) + 0.5) * 0.5 if tie_values else readable(rng, n)
        return {"x": x, "scale": 0.5, "qmin": -4, "qmax": 3}
    return lambda: ctx.smallest_failure(FWD, build, [4, 8, 16], ctx.ref.fake_quant_forward, name="out")


def backward_example(ctx, ends=False):
    def build(rng, n):
        x = readable(rng, n)
        if ends:
            x[:2] = [-2.0, 1.5]  # x / 0.5 = qmin and qmax exactly
        return {"dout": upstream(rng, n).round(2), "x": x, "scale": 0.5, "qmin": -4, "qmax": 3}
    return lambda: ctx.smallest_failure(BWD, build, [4, 8, 16], ctx.ref.fake_quant_backward, name="dx")


# -- checks ---------------------------------------------------------------------------------------
def _forward(ctx, x, scale, qmin, qmax):
    out = ctx.call(FWD, x, scale, qmin, qmax)
    ctx.expect_array("out", out, ctx.ref.fake_quant_forward(x, scale, qmin, qmax), FWD,
                     regions=regions(x, scale, qmin, qmax), example=forward_example(ctx))


def _backward(ctx, x, scale, qmin, qmax):
    """The learner's dx against finite differences of the surrogate (x is kink-free)."""
    dout = upstream(ctx.rng, x.shape)
    dx = ctx.call(BWD, dout, x, scale, qmin, qmax)
    ctx.expect_gradient("dx", dx, surrogate(ctx, scale, qmin, qmax), x, dout, BWD, rows=True,
                        traps=backward_traps(ctx, dout),
                        reference=ctx.ref.fake_quant_backward(dout, x, scale, qmin, qmax),
                        regions=regions(x, scale, qmin, qmax), example=backward_example(ctx),
                        counts={"1 / scale, the grid's steps per unit of x": 1 / scale})


@QUESTION.check("forward: round to the grid, clip to [qmin, qmax], scale back", points=2, hints=(
    "The output may only take the values scale * k for the integers k from qmin to qmax.",
    "Count in grid steps first (divide by the step), round to the nearest integer, clip that "
    "integer to [qmin, qmax], then multiply by the step again.",
    "Clip the rounded integer, not x itself in its own units, and do not forget to multiply "
    "back: the answer is in the units of x.",
))
def forward_values(ctx):
    for scale, qmin, qmax, shape in ((0.1, -128, 127, (6, 40)), (0.03, -8, 7, (5, 7)),
                                     (0.25, 0, 255, (4, 9))):
        _forward(ctx, draw(ctx.rng, shape, scale, qmin, qmax), scale, qmin, qmax)


@QUESTION.check("forward: values exactly half way between two grid points", points=1, kinks=("round-half",), hints=(
    "What does your forward give when x / scale is exactly 2.5, or -1.5?",
    "The rule is round half to even (banker's rounding), as np.round, torch.round and "
    "PyTorch's fake quantisation use: a tie goes to the even neighbour.",
    "Adding 0.5 and taking the floor rounds every tie up; numpy's own rounding already "
    "rounds half to even.",
))
def forward_ties(ctx):
    scale, qmin, qmax = 0.25, -8, 7  # a power of two: x / scale is exact, ties are real ties
    u = np.concatenate([np.arange(qmin, qmax) + 0.5, grid_units(ctx.rng, 12, qmin, qmax)])
    x = ctx.rng.permutation(u).reshape(3, -1) * scale
    out = ctx.call(FWD, x, scale, qmin, qmax)
    expected = ctx.ref.fake_quant_forward(x, scale, qmin, qmax)
    got = ctx.as_array("out", out, expected, FWD)
    up = rounded_ties_up(x, scale, qmin, qmax, away_from_zero=False)
    away = rounded_ties_up(x, scale, qmin, qmax, away_from_zero=True)
    ties = np.abs(x / scale - np.floor(x / scale) - 0.5) == 0
    ctx.expect_array("out", got, expected, FWD,
                     traps={"round-half-up": away if ctx.close(got, away) else up},
                     regions={"where x / scale is exactly halfway between two integers": ties},
                     example=forward_example(ctx, tie_values=True))


@QUESTION.check("backward: inputs within the range", points=2, hints=(
    "Finite differences of the forward are 0 almost everywhere. Is that the gradient a "
    "quantisation-aware training step needs?",
    "The straight-through estimator differentiates the surrogate clip(x, scale * qmin, "
    "scale * qmax) instead of the staircase: inside the range that is the identity.",
    "Inside the range, dx is dout itself, unchanged: no factor of scale, no rounding.",
))
def backward_inside(ctx):
    # Mostly inside the range, with a few clipped entries: a backward that returns dout as it
    # came (right inside, wrong outside) must not pass for a straight-through estimator.
    _backward(ctx, draw(ctx.rng, (4, 50), 0.1, -128, 127, outside=0.05), 0.1, -128, 127)


@QUESTION.check("backward: no gradient where the forward clipped", points=2, hints=(
    "Take an x far above scale * qmax: does the forward's output change when x grows a little?",
    "Where x / scale is below qmin or above qmax the clip is active, and the surrogate is flat "
    "there just like the forward: the gradient is 0.",
    "Compare x / scale itself (before rounding) with qmin and qmax; keep dout where it lies "
    "between them and zero it elsewhere.",
))
def backward_clipped(ctx):
    for scale, qmin, qmax, shape in ((0.05, -8, 7, (6, 30)), (0.02, 0, 255, (3, 40))):
        _backward(ctx, draw(ctx.rng, shape, scale, qmin, qmax, outside=0.5), scale, qmin, qmax)


@QUESTION.check("backward: inputs exactly at either end of the range", points=1, kinks=("range-ends",), hints=(
    "What does your backward give when x / scale is exactly qmin, or exactly qmax?",
    "The ends are representable values: the range is inclusive, so the gradient passes there "
    "(a non-strict comparison on both sides).",
    "Compare the unrounded x / scale with qmin and qmax; a comparison on the forward's output "
    "cannot tell an input at the end from one far beyond it.",
))
def backward_ends(ctx):
    scale, qmin, qmax = 0.125, -8, 7  # a power of two: x = scale * qmax is exact
    u = grid_units(ctx.rng, 30, qmin, qmax, outside=0.4)
    u[ctx.rng.permutation(30)[:10]] = [qmin, qmax] * 5
    x = u.reshape(5, 6) * scale
    dout = upstream(ctx.rng, x.shape)
    dx = ctx.call(BWD, dout, x, scale, qmin, qmax)
    ctx.expect_array("dx", dx, ctx.ref.fake_quant_backward(dout, x, scale, qmin, qmax), BWD,
                     traps=backward_traps(ctx, dout), regions=regions(x, scale, qmin, qmax),
                     example=backward_example(ctx, ends=True),
                     counts={"1 / scale, the grid's steps per unit of x": 1 / scale})


@QUESTION.check("any shape, forward and backward: 1-D, 4-D and a large tensor", points=1, hints=(
    "Both functions work element by element: the shape of x should not matter.",
    "Return arrays of the same shape as x; avoid reshapes that assume two dimensions.",
    "Vectorise with numpy: a Python loop over a large tensor is slow.",
))
def any_shape(ctx):
    for shape in ((7,), (2, 3, 4, 5)):
        x = draw(ctx.rng, shape, 0.05, -8, 7)
        _forward(ctx, x, 0.05, -8, 7)
        _backward(ctx, x, 0.05, -8, 7)
    _backward(ctx, draw(ctx.rng, (48, 64), 0.02, -128, 127), 0.02, -128, 127)  # random directions


@QUESTION.check("inputs left unchanged", points=1, hints=(
    "Does either function assign into `x` or `dout`, or change them in place (*=, out=...)?",
    "Dividing in place by the step, or zeroing entries of dout, changes the caller's array.",
    "Build the result in a fresh array (np.where, np.clip and arithmetic all return new ones).",
))
def inputs_unchanged(ctx):
    scale, qmin, qmax = 0.1, -8, 7
    x = draw(ctx.rng, (4, 6), scale, qmin, qmax)
    dout = upstream(ctx.rng, x.shape)
    ctx.expect_inputs_unchanged([
        (FWD, (x, scale, qmin, qmax), ["x"], ctx.ref.fake_quant_forward(x, scale, qmin, qmax)),
        (BWD, (dout, x, scale, qmin, qmax), ["dout", "x"],
         ctx.ref.fake_quant_backward(dout, x, scale, qmin, qmax))])
