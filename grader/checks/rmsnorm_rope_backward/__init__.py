"""Hidden checks for rmsnorm_rope_backward: RMSNorm's forward and backward over the last axis,
and rotary position embeddings' (RoPE, half-split) forward and backward.

Shapes: x, y, dy, dx (N, D); gamma, dgamma (D,); rstd (N,); pos int64 (N,). The forwards are
compared with the reference (``ctx.ref``, the solution notebook), every gradient with central
differences of the reference forward. The RMSNorm backward is called with the reference's own
rstd. A wrong answer is named by equality with a trap's form on the same inputs (``traps``);
a RoPE backward that turns dy by +theta is the rotated half's sign when the learner's own
forward turns by -theta. Each trap has a runnable wrong answer in
tests/answers/rmsnorm_rope_backward/.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.rmsnorm_rope_backward import traps
from backprop_traps.grader.checks.rmsnorm_rope_backward.probes import (
    EPS, RMS_BWD, RMS_FWD, ROPE_BWD, ROPE_FWD, gamma, positions, rows, where_rms, where_rope)
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

CUT_ROWS = [(0, 0), (1, 0)]  # the first two arguments' rows: a prefix of the batch is a batch
QUESTION = Question(
    "rmsnorm_rope_backward", "RMSNorm and RoPE backward: no mean path, and the inverse rotation",
    traps=traps.TRAPS, difficulty="medium", kinks={},
    axes={name: ("row n", "feature") for name in ("y", "dx")},
    shrink={RMS_FWD: {"N": [(0, 0)]}, RMS_BWD: {"N": [(0, 0), (1, 0), (3, 0)]},
            ROPE_FWD: {"N": CUT_ROWS}, ROPE_BWD: {"N": CUT_ROWS}})


def located(failure: Fail, where: str) -> Fail:
    """``failure`` with the input's sizes after its first line."""
    head, _, rest = failure.feedback.partition("\n")
    return Fail(f"{head.rstrip('.')}; input {where}." + (f"\n{rest}" if rest else ""), failure.trap,
                settled=failure.settled)


# -- RMSNorm -------------------------------------------------------------------------------
def check_rms_forward(ctx, x, g, eps):
    where = where_rms(*x.shape, eps)
    got = ctx.unpack(ctx.call(RMS_FWD, x, g, eps), 2, RMS_FWD, "y, rstd")
    expected = ctx.ref.rmsnorm_forward(x, g, eps)
    forms = traps.rmsnorm_forward_forms(x, g, eps)
    for i, name in ((1, "rstd"), (0, "y")):
        try:
            ctx.expect_array(name, got[i], expected[i], RMS_FWD,
                             traps={t: [f[i] for f in fs] for t, fs in forms.items()})
        except Fail as failure:
            raise located(failure, where) from None


def check_rms_gradient(ctx, index, x, g, eps):
    """dx (index 0) or dgamma (1) against central differences of the reference forward."""
    where = where_rms(*x.shape, eps)
    _, rstd = ctx.ref.rmsnorm_forward(x, g, eps)
    dy = upstream(ctx.rng, x.shape)
    got = ctx.unpack(ctx.call(RMS_BWD, dy, x, g, rstd), 2, RMS_BWD, "dx, dgamma")
    name = ("dx", "dgamma")[index]
    forms = traps.rmsnorm_backward_forms(ctx.ref, dy, x, g, rstd)[name]
    f = (lambda v: ctx.ref.rmsnorm_forward(v, g, eps)[0]) if index == 0 else \
        (lambda v: ctx.ref.rmsnorm_forward(x, v, eps)[0])
    try:
        ctx.expect_gradient(name, got[index], f, (x, g)[index], dy, RMS_BWD, traps=forms,
                            reference=ctx.ref.rmsnorm_backward(dy, x, g, rstd)[index], rows=index == 0)
    except Fail as failure:
        raise located(failure, where) from None


@QUESTION.check("RMSNorm forward: y and rstd", points=2, hints=(
    "What does RMSNorm measure each row's size with, and around which value?",
    "rstd is one over the square root of the mean of the squares plus eps: one number per row.",
    "y is x times rstd (as a column) times gamma; nothing is added.",
))
def rms_forward(ctx):
    for n, d, eps in ((5, 8, 0.0), (6, 6, 0.5)):
        check_rms_forward(ctx, rows(ctx.rng, n, d), gamma(ctx.rng, d), eps)


@QUESTION.check("RMSNorm backward: dx against finite differences", points=3, hints=(
    "rstd is computed from every x of the row: moving one x_i moves it, and every output of the row.",
    "Differentiate x-hat_j = x_j * rstd with respect to x_i: how many paths lead from x_i to x-hat_j?",
    "With eps = 0, scaling a row changes no output: each row of dx must be orthogonal to its row of x.",
))
def rms_dx(ctx):
    for n, d, eps in ((6, 10, 0.0), (5, 5, 0.3)):
        check_rms_gradient(ctx, 0, rows(ctx.rng, n, d), gamma(ctx.rng, d), eps)


@QUESTION.check("RMSNorm backward: dgamma against finite differences", points=1, hints=(
    "gamma multiplies x-hat in every row of the batch: its gradient collects one contribution per row.",
    "dgamma has gamma's shape, one number per feature.",
))
def rms_dgamma(ctx):
    check_rms_gradient(ctx, 1, rows(ctx.rng, 6, 10), gamma(ctx.rng, 10), EPS)


# -- RoPE ----------------------------------------------------------------------------------
def check_rope_forward(ctx, x, pos, base):
    got = ctx.call(ROPE_FWD, x, pos, base)
    try:
        ctx.expect_array("y", got, ctx.ref.rope_forward(x, pos, base), ROPE_FWD,
                         traps=traps.rope_forward_forms(ctx.ref, x, pos, base))
    except Fail as failure:
        raise located(failure, where_rope(*x.shape, base)) from None


def forward_turns_back(ctx, dy, pos, base) -> bool:
    """Whether the learner's own forward turns every pair by -theta (the rotated half's sign)."""
    try:
        y = ctx.call(ROPE_FWD, dy, pos, base)
    except Fail:
        return False
    wrong = ctx.ref.rope_forward(dy, -pos, base)
    return isinstance(y, np.ndarray) and y.shape == wrong.shape and y.dtype.kind == "f" and ctx.close(y, wrong)


def check_rope_backward(ctx, n, d, base, top=4096):
    pos = positions(ctx.rng, n, top)
    dy = upstream(ctx.rng, (n, d))
    x = rows(ctx.rng, n, d)
    got = ctx.call(ROPE_BWD, dy, pos, base)
    try:
        ctx.expect_gradient("dx", got, lambda v: ctx.ref.rope_forward(v, pos, base), x, dy, ROPE_BWD,
                            traps=traps.rope_backward_forms(ctx.ref, dy, pos, base),
                            reference=ctx.ref.rope_backward(dy, pos, base))
    except Fail as failure:
        if failure.trap == "rotated-forward" and forward_turns_back(ctx, dy, pos, base):
            failure = Fail(failure.feedback.replace(traps.EXPLANATION["rotated-forward"],
                                                    traps.EXPLANATION["rotate-half-sign"]),
                           "rotate-half-sign")
        raise located(failure, where_rope(n, d, base)) from None


@QUESTION.check("RoPE forward: y", points=2, hints=(
    "Which feature is each feature paired with, and by what angle does each pair turn?",
    "Feature i goes with feature i + D/2; the pair's angle is pos times base to the power -2i/D.",
    "The first half becomes x1 cos - x2 sin, the second x2 cos + x1 sin.",
))
def rope_forward_values(ctx):
    for n, d, base, top in ((5, 8, 10000.0, 4096), (4, 6, 10.0, 50)):
        check_rope_forward(ctx, rows(ctx.rng, n, d), positions(ctx.rng, n, top), base)


@QUESTION.check("RoPE backward: dx against finite differences", points=3, hints=(
    "The forward multiplies each pair by a 2 x 2 matrix. What does the backward multiply dy by?",
    "The backward multiplies by the transpose of the forward's matrix. What is a rotation's transpose?",
    "It needs no x: the forward is linear in x, so its Jacobian depends on the positions alone.",
))
def rope_dx(ctx):
    check_rope_backward(ctx, 5, 8, 10000.0)
    check_rope_backward(ctx, 4, 6, 10.0, top=50)


# -- both ----------------------------------------------------------------------------------
@QUESTION.check("edge sizes (N = 1, D = 1, D = 2, a row of zeros) and a 64 x 256 batch: all four functions",
                points=1, hints=(
    "Keep every array 2-D and reduce with explicit axes, so that N = 1 and D = 1 behave like any other size.",
    "A row of zeros has a mean square of 0: only eps, inside the square root, keeps rstd finite.",
    "With D = 2 RoPE has one pair, at frequency 1: its angle is the position itself, in radians.",
))
def edge_sizes(ctx):
    for n, d, eps in ((1, 7, 0.0), (4, 1, EPS), (3, 5, EPS), (64, 256, EPS)):
        x, g = rows(ctx.rng, n, d), gamma(ctx.rng, d)
        if (n, d) == (3, 5):
            x[1] = 0.0  # rstd = 1 / sqrt(eps), y = 0
        check_rms_forward(ctx, x, g, eps)
        check_rms_gradient(ctx, 0, x, g, eps)
        check_rms_gradient(ctx, 1, x, g, eps)
    for n, d in ((1, 2), (3, 2), (64, 256)):
        check_rope_forward(ctx, rows(ctx.rng, n, d), positions(ctx.rng, n), 10000.0)
        check_rope_backward(ctx, n, d, 10000.0)


@QUESTION.check("inputs left unchanged (and the answers still right)", points=1, hints=(
    "Does any of the four functions change x, dy, gamma, rstd or pos in place (-=, *=, a slice assigned)?",
    "Build results in new arrays, or copy first.",
))
def inputs_unchanged(ctx):
    x, g = rows(ctx.rng, 4, 6), gamma(ctx.rng, 6)
    _, rstd = ctx.ref.rmsnorm_forward(x, g, 0.0)
    dy, pos = upstream(ctx.rng, (4, 6)), positions(ctx.rng, 4)
    ref = ctx.ref
    ctx.expect_inputs_unchanged([
        (RMS_FWD, (x, g, 0.0), ["x", "gamma"], ref.rmsnorm_forward(x, g, 0.0)),
        (RMS_BWD, (dy, x, g, rstd), ["dy", "x", "gamma", "rstd"], ref.rmsnorm_backward(dy, x, g, rstd)),
        (ROPE_FWD, (x, pos, 10000.0), ["x", "pos"], ref.rope_forward(x, pos, 10000.0)),
        (ROPE_BWD, (dy, pos, 10000.0), ["dy", "pos"], ref.rope_backward(dy, pos, 10000.0)),
    ])
