"""Hidden checks for layernorm_backward: LayerNorm's forward and backward over the last axis.

Shapes: x, y, dy, dx (N, D); gamma, beta, dgamma, dbeta (D,); mean, rstd (N,). Most inputs
have N != D, so a reduction over the batch changes a shape; square inputs (N = D) catch the
same slip where shapes cannot. The backward is always called with the reference's own mean
and rstd, and dx, dgamma and dbeta have checks of their own: each is compared with central
differences of the reference forward (``ctx.ref``, the solution notebook). A wrong answer
is named two ways: by equality with a trap's formula on the same inputs (trap forms are
read off the reference's answers where they can be), and otherwise by its behaviour on
purpose-built probes (``probes.py``): rows of known variance with a large eps, a
row whose dx must not move when the other rows change, the properties dx . 1 = 0 and
dx . x-hat = 0 at eps = 0, a batch repeated twice. Each trap has a runnable wrong answer in
tests/answers/layernorm_backward/.
"""
from __future__ import annotations

from backprop_traps.grader.checks.layernorm_backward import probes
from backprop_traps.grader.checks.layernorm_backward.probes import BWD, EPS, FWD, GRADS, OUTPUTS, params, rows
from backprop_traps.grader.checks.layernorm_backward.traps import EXPLANATION, TRAPS, backward_traps, fail, forward_traps
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("layernorm_backward", "LayerNorm backward: the statistics depend on x too", traps=TRAPS,
                    difficulty="medium",
                    kinks={})


# -- comparing, and naming what is wrong --------------------------------------------------


def expect_value(ctx, name, got, expected, fn, where, candidates, diagnose, example=None):
    try:
        ctx.expect_array(name, got, expected, fn, example=example)
    except Fail as failure:
        raise fail(failure, where, got, candidates, diagnose) from None


def expect_grad(ctx, name, got, f, wrt, dy, where, candidates, diagnose, example=None, rows=False):
    try:
        ctx.expect_gradient(name, got, f, wrt, dy, BWD, example=example, rows=rows)
    except Fail as failure:
        raise fail(failure, where, got, candidates, diagnose) from None


def called(ctx, fn, args, where, echo_args=False):
    """The learner's ``fn(*args)``; a broadcast error between (N, D) and (N,) is wrong-axis."""
    try:
        return ctx.call(fn, *args, echo_args=echo_args)
    except Fail as failure:
        if failure.trap is None and probes.broadcast_slip(failure.feedback):
            raise Fail(f"{failure.feedback.rstrip('.')}; input {where}. "
                       f"{EXPLANATION['wrong-axis']}", "wrong-axis") from None
        raise


def call3(ctx, fn, args, names, where):
    """The learner's three outputs, as ``called`` gets them."""
    return ctx.unpack(called(ctx, fn, args, where), 3, fn, names)


# -- checks' building blocks -----------------------------------------------------------------
def check_forward(ctx, x, gamma, beta, eps, example=None):
    """The learner's (y, mean, rstd) against the reference's: mean, then rstd, then y."""
    n, d = x.shape
    where = f"N={n}, D={d}, eps={eps:g}"
    got = call3(ctx, FWD, (x, gamma, beta, eps), "y, mean, rstd", where)
    expected = ctx.ref.layernorm_forward(x, gamma, beta, eps)
    wrong = forward_traps(ctx, x, gamma, beta, eps)
    for i in (1, 2, 0):
        candidates = {trap: [form[i] for form in forms] for trap, forms in wrong.items()}
        expect_value(ctx, OUTPUTS[i], got[i], expected[i], FWD, where, candidates,
                     lambda: probes.diagnose_forward(ctx),
                     example=None if example is None else (lambda i=i: example(ctx, i, eps)))
    return got


def backward_setup(ctx, x, gamma, beta, eps):
    """(dy, mean, rstd, learner's (dx, dgamma, dbeta), where) for one input."""
    n, d = x.shape
    where = f"N={n}, D={d}, eps={eps:g}"
    _, mean, rstd = ctx.ref.layernorm_forward(x, gamma, beta, eps)
    dy = upstream(ctx.rng, x.shape)
    got = call3(ctx, BWD, (dy, x, gamma, mean, rstd), ", ".join(GRADS), where)
    return dy, mean, rstd, got, where


def check_gradient(ctx, index, x, gamma, beta, eps, example=True):
    """One of dx, dgamma, dbeta against central differences of the reference forward."""
    dy, mean, rstd, got, where = backward_setup(ctx, x, gamma, beta, eps)
    wrong = backward_traps(ctx, dy, x, gamma, mean, rstd, eps)[GRADS[index]]
    args = [x, gamma, beta]
    wrt = args[index]

    def f(value):
        changed = list(args)
        changed[index] = value
        return ctx.ref.layernorm_forward(*changed, eps)[0]
    diagnose = (lambda: probes.diagnose_backward(ctx)) if index == 0 else \
        (lambda: probes.diagnose_param(ctx, index))
    expect_grad(ctx, GRADS[index], got[index], f, wrt, dy, where, wrong, diagnose,
                example=probes.backward_example(ctx, index, eps) if example else None,
                rows=index == 0)  # LayerNorm normalises each row of x on its own
    return got


# -- checks ------------------------------------------------------------------------------
@QUESTION.check("forward: y, mean and rstd", points=2, hints=(
    "Each row is normalised with its own statistics: mean and rstd hold one number per row, N "
    "of them.",
    "The variance divides by D (the biased one, as PyTorch's layer_norm), and eps is added to "
    "the variance before the square root.",
    "Subtract the row means as a column: a flat array of N means broadcasts across the "
    "features instead, silently when N = D.",
))
def forward_values(ctx):
    for n, d in ((5, 8), (6, 6)):  # eps = 0 here: where eps goes is the next check's business
        x = rows(ctx.rng, n, d)
        check_forward(ctx, x, *params(ctx.rng, d), 0.0, example=probes.forward_example)


@QUESTION.check("forward on near-constant rows (where eps matters)", points=2, hints=(
    "What is the variance of a row whose values are all equal, and what does your rstd become "
    "then?",
    "eps belongs inside the square root: for a constant row rstd is one over the square root of "
    "eps, about 316 for eps = 1e-5, not infinite and not 1 / eps.",
    "A constant row normalises to all zeros, so its output is beta.",
))
def forward_near_constant(ctx):
    x = probes.near_constant_rows(ctx.rng, 8)
    check_forward(ctx, x, *params(ctx.rng, 8), EPS)
    x = rows(ctx.rng, 3, 6)  # ordinary rows, a large eps: where eps goes changes every rstd
    check_forward(ctx, x, *params(ctx.rng, 6), 0.5)


@QUESTION.check("dx against finite differences", points=3, hints=(
    "The mean and the variance are computed from x: moving one x_i moves both, and through "
    "them every output of the row.",
    "Differentiate x-hat_j = (x_j - mean) * rstd with respect to x_i: a direct term, a term "
    "through the mean and a term through the variance.",
    "Check your dx: every row must sum to zero, since adding a constant to a row changes "
    "nothing.",
))
def dx_values(ctx):
    for n, d in ((6, 10), (5, 5)):
        check_gradient(ctx, 0, rows(ctx.rng, n, d), *params(ctx.rng, d), 0.0)


@QUESTION.check("dx: two identities of every row (eps = 0)", points=1,
                hints=(
    "Adding the same number to every entry of a row does not change its normalised values. "
    "What does that say about the sum of each row of dx?",
    "With eps = 0, scaling a row about its mean does not change them either: each row of dx "
    "must be orthogonal to x-hat.",
    "Both reductions in dx run along the features of each row, never across the batch.",
))
def dx_properties(ctx):
    x = rows(ctx.rng, 5, 8)
    gamma, beta = params(ctx.rng, 8)
    dy, mean, rstd, got, where = backward_setup(ctx, x, gamma, beta, 0.0)
    broken = probes.broken_property(got[0], dy, x, gamma, mean, rstd)
    if broken is not None:
        kind, sentence = broken
        trap, observed = probes.diagnose_backward(ctx, rows_only=True)
        if trap is None:  # named only when this dx is that mistake, not for any broken sum
            trap = probes.property_trap(kind, got[0], dy, x, gamma, mean, rstd)
        raise fail(Fail(f"`dx` from {BWD} (input {where}) breaks a property every LayerNorm "
                             f"gradient has: {sentence}"), None, got[0], {}, lambda: (trap, observed))
    wrong = backward_traps(ctx, dy, x, gamma, mean, rstd, 0.0)["dx"]
    expect_grad(ctx, "dx", got[0], lambda v: ctx.ref.layernorm_forward(v, gamma, beta, 0.0)[0],
                x, dy, where, wrong, lambda: probes.diagnose_backward(ctx), rows=True)


@QUESTION.check("dgamma against finite differences", points=2, hints=(
    "gamma multiplies x-hat in every row of the batch: its gradient collects one contribution "
    "per row.",
    "Sum over the batch (the first axis), not the mean: any 1/N is already inside dy.",
    "dgamma has gamma's shape, one number per feature.",
))
def dgamma_values(ctx):
    check_gradient(ctx, 1, rows(ctx.rng, 6, 10), *params(ctx.rng, 10), 0.0)


@QUESTION.check("dbeta against finite differences", points=1, hints=(
    "beta is added to every row, so its gradient is the upstream gradient of every row, added "
    "up per feature.",
    "One number per feature: sum over the first axis, not the mean.",
))
def dbeta_values(ctx):
    check_gradient(ctx, 2, rows(ctx.rng, 6, 10), *params(ctx.rng, 10), 0.0)


@QUESTION.check("dx on near-constant rows (with the rstd given)", points=1, hints=(
    "The backward is handed the rstd the forward computed, with eps inside. Recomputing the "
    "spread from x loses eps.",
    "For a constant row x-hat is zero, and dx is rstd times g minus its row mean.",
))
def dx_near_constant(ctx):
    x = probes.near_constant_rows(ctx.rng, 8)
    check_gradient(ctx, 0, x, *params(ctx.rng, 8), EPS, example=False)


@QUESTION.check("edge sizes (N = 1, D = 1, D = 2) and a 64 x 300 batch: forward and backward",
                points=1, hints=(
    "With D = 1 every row is constant: y is beta and dx is zero, and only eps keeps rstd "
    "finite.",
    "Keep every array 2-D and reduce with explicit axes, so that N = 1 and D = 1 behave like "
    "any other size.",
))
def edge_sizes(ctx):
    for n, d in ((1, 7), (4, 1), (3, 2), (64, 300)):
        x = rows(ctx.rng, n, d)
        gamma, beta = params(ctx.rng, d)
        eps = EPS if d == 1 else 0.0  # a row of one value is constant: it needs eps
        check_forward(ctx, x, gamma, beta, eps)
        for index in range(3):
            check_gradient(ctx, index, x, gamma, beta, eps, example=False)


@QUESTION.check("inputs left unchanged (and the answers still right)", points=1, hints=(
    "Does either function change x, dy, gamma, beta, mean or rstd in place (-=, *=)?",
    "Build results in new arrays, or copy first.",
))
def inputs_unchanged(ctx):
    """Echoes the arguments back after each call; the answers must be right too, so that a
    function that does nothing cannot earn the point."""
    x = rows(ctx.rng, 4, 6)
    gamma, beta = params(ctx.rng, 6)
    where = "N=4, D=6, eps=0"
    result = called(ctx, FWD, (x, gamma, beta, 0.0), where, echo_args=True)
    ctx.expect_unchanged(FWD, result, [x, gamma, beta], ["x", "gamma", "beta"])
    y, mean, rstd = ctx.ref.layernorm_forward(x, gamma, beta, 0.0)
    got = ctx.unpack(result.value, 3, FWD, "y, mean, rstd")
    expect_value(ctx, "y", got[0], y, FWD, where, {}, lambda: probes.diagnose_forward(ctx))
    dy = upstream(ctx.rng, x.shape)
    result = called(ctx, BWD, (dy, x, gamma, mean, rstd), where, echo_args=True)
    ctx.expect_unchanged(BWD, result, [dy, x, gamma, mean, rstd], ["dy", "x", "gamma", "mean", "rstd"])
    got = ctx.unpack(result.value, 3, BWD, ", ".join(GRADS))
    expect_value(ctx, "dx", got[0], ctx.ref.layernorm_backward(dy, x, gamma, mean, rstd)[0], BWD,
                 where, {}, lambda: probes.diagnose_backward(ctx))
