"""Hidden checks for batchnorm_backward: BatchNorm's forward in both modes and its training
backward, where every example's gradient depends on the whole batch.

Shapes: x, y, dy, dx (N, D); gamma, beta, running averages, mean, rstd, dgamma, dbeta (D,).
Most inputs have N != D, so a reduction over the wrong axis changes a shape; square inputs
catch the same slip where shapes cannot. The backward is called with the reference's own
mean and rstd, and each gradient is compared with central differences of the reference's
training forward (``ctx.ref``, the solution notebook). A wrong answer is named by equality
with a trap's form on the same inputs (``traps``), or by behaviour: a column of dx that does
not sum to zero, a batch of one that is not refused (``probes``). Each trap has a runnable
wrong answer in tests/answers/batchnorm_backward/.
"""
from __future__ import annotations

from backprop_traps.grader.checks.batchnorm_backward import probes, traps
from backprop_traps.grader.checks.batchnorm_backward.probes import EPS, MOMENTUM, problem
from backprop_traps.grader.checks.batchnorm_backward.traps import BWD, FWD, GRADS, OUTPUTS
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.statistics_path import mean_path_lost
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("batchnorm_backward", "BatchNorm backward: every example's gradient depends "
                    "on the whole batch", traps=traps.TRAPS, difficulty="medium",
                    kinks={})  # no kink, tie or threshold (issue 24: validate asks)


# -- comparing, and naming what is wrong --------------------------------------------------
def judged(expect, got, forms: dict, diagnose=None):
    """``expect()`` (a ctx.expect_* call); on failure, the trap whose form ``got`` equals (any
    shape), else the one ``diagnose()`` names, is added to the feedback."""
    try:
        return expect()
    except Fail as failure:
        trap = failure.trap or traps.same_as(got, forms) or (diagnose() if diagnose else None)
        if trap is None or failure.trap is not None:
            raise
        head, _, details = failure.feedback.partition("\n")
        raise Fail(f"{head} {QUESTION.trap(trap).explanation}" + (f"\n{details}" if details else ""),
                   trap) from None


def forward(ctx, x, gamma, beta, running_mean, running_var, training, momentum, eps):
    """The learner's five forward outputs (a tuple of five, or Fail)."""
    got = ctx.call(FWD, x, gamma, beta, running_mean, running_var, training, momentum, eps)
    return ctx.unpack(got, 5, FWD, ", ".join(OUTPUTS))


def check_forward(ctx, indices, x, gamma, beta, running_mean, running_var, training, momentum, eps,
                  example=True):
    """The learner's forward outputs ``indices`` against the reference's, in that order."""
    args = (x, gamma, beta, running_mean, running_var, training, momentum, eps)
    got = forward(ctx, *args)
    expected = ctx.ref.batchnorm_forward(*args)
    wrong = traps.forward_forms(ctx, *args)
    for i in indices:
        judged(lambda i=i: ctx.expect_array(
            OUTPUTS[i], got[i], expected[i], FWD,
            example=probes.forward_example(ctx, i, training, momentum, eps) if example else None),
            got[i], wrong[i])
    return got


def train_cache(ctx, x, gamma, beta, eps):
    """(mean, rstd) of the reference's training forward."""
    rm, rv = probes.running(ctx.rng, x.shape[1])
    return ctx.ref.batchnorm_forward(x, gamma, beta, rm, rv, True, MOMENTUM, eps)[1:3]


def check_gradients(ctx, indices, x, gamma, beta, eps, example=True):
    """The learner's gradients ``indices`` (0 dx, 1 dgamma, 2 dbeta) against central
    differences of the reference's training forward."""
    mean, rstd = train_cache(ctx, x, gamma, beta, eps)
    dy = upstream(ctx.rng, x.shape)
    got = ctx.unpack(ctx.call(BWD, dy, x, gamma, mean, rstd), 3, BWD, ", ".join(GRADS))
    wrong = traps.backward_forms(ctx, dy, x, gamma, mean, rstd)
    args = [x, gamma, beta]
    rm, rv = probes.running(ctx.rng, x.shape[1])
    for i in indices:
        def f(value, i=i):
            changed = list(args)
            changed[i] = value
            return ctx.ref.batchnorm_forward(*changed, rm, rv, True, MOMENTUM, eps)[0]
        diagnose = (lambda: "stats-as-constants" if traps.column_sums_broken(got[0], x) and mean_path_lost(
            got[0], dy * gamma, (x - mean) * rstd, rstd, axis=0) else None) if i == 0 else None  # that mistake, not any broken sum
        judged(lambda i=i, f=f: ctx.expect_gradient(
            GRADS[i], got[i], f, args[i], dy, BWD,
            example=probes.backward_example(ctx, i) if example else None),
            got[i], wrong[GRADS[i]], diagnose)
    return got, (dy, mean, rstd)


# -- checks ------------------------------------------------------------------------------
@QUESTION.check("training forward: y, mean and rstd from the batch's own statistics", points=2, hints=(
    "In training, which examples does the mean of feature j average over?",
    "One mean and one rstd per feature, from this batch; the variance that normalises the batch "
    "describes the batch itself.",
    "Compare with the contract's two variances: which one normalises, which one is averaged?",
))
def train_forward(ctx):
    for (n, d), eps in (((8, 5), EPS), ((6, 6), 0.3)):  # eps > 0: PyTorch refuses 0 in training
        check_forward(ctx, (1, 2, 0), *problem(ctx.rng, n, d), True, MOMENTUM, eps)


@QUESTION.check("training forward: the running mean and variance", points=2, hints=(
    "What does momentum weigh: the old running value, or the new batch's?",
    "The running variance is an estimate for evaluation, not a description of this batch: "
    "which variance estimates a population's?",
    "The running averages come back as new arrays; the old ones stay as they were.",
))
def running_averages(ctx):
    for (n, d), momentum in (((8, 5), MOMENTUM), ((5, 5), 0.3)):
        check_forward(ctx, (3, 4), *problem(ctx.rng, n, d), True, momentum, EPS)


@QUESTION.check("evaluation forward: the running statistics, returned unchanged", points=2, hints=(
    "At evaluation, should one example's output depend on the other examples in its batch?",
    "Normalise with the running averages, and return them as they came in.",
))
def eval_forward(ctx):
    for n, d in ((7, 4), (1, 3)):
        check_forward(ctx, (0, 1, 2, 3, 4), *problem(ctx.rng, n, d), False, MOMENTUM, EPS)


@QUESTION.check("training forward with N = 1 and N = 2", points=1, hints=(
    "What are the mean and the variance of one number, and what does that make the output?",
    "The contract asks for a ValueError when training gets N = 1; N = 2 must work, running "
    "averages included.",
))
def batch_of_one(ctx):
    x, gamma, beta, rm, rv = problem(ctx.rng, 1, 4)
    probes.refuses_batch_of_one(ctx, x, gamma, beta, rm, rv)
    check_forward(ctx, (0, 1, 2, 3, 4), *problem(ctx.rng, 2, 4), True, MOMENTUM, EPS)


@QUESTION.check("dx against finite differences", points=3, hints=(
    "The mean and the variance of feature j are computed from every example: moving one x "
    "moves both, and through them every output of that feature.",
    "Differentiate x-hat_m = (x_m - mean) * rstd with respect to x_n: a direct term, a term "
    "through the mean, a term through the variance.",
    "Check your dx: every column must sum to zero, since adding a constant to a feature "
    "changes nothing.",
))
def dx_values(ctx):
    for n, d in ((6, 4), (5, 5)):
        x = probes.batch(ctx.rng, n, d)
        check_gradients(ctx, (0,), x, *probes.params(ctx.rng, d), 0.0)


@QUESTION.check("dx: two identities of every column (eps = 0)", points=1, hints=(
    "Adding the same number to a feature in every example does not change the normalised "
    "values. What does that say about each column of dx?",
    "With eps = 0, scaling a feature about its mean does not change them either.",
))
def dx_properties(ctx):
    x = probes.batch(ctx.rng, 7, 3)
    gamma, beta = probes.params(ctx.rng, 3)
    mean, rstd = train_cache(ctx, x, gamma, beta, 0.0)
    dy = upstream(ctx.rng, x.shape)
    got = ctx.unpack(ctx.call(BWD, dy, x, gamma, mean, rstd), 3, BWD, ", ".join(GRADS))
    dx = ctx.as_array("dx", got[0], x, BWD)
    xhat = (x - mean) * rstd
    scale = 1e-7 * (1.0 + abs(dx).sum(axis=0))
    for values, what in ((dx.sum(axis=0), "sum to"), ((dx * xhat).sum(axis=0), "have dot products with x-hat of")):
        if any(abs(values) > scale):
            wrong = traps.backward_forms(ctx, dy, x, gamma, mean, rstd)["dx"]
            trap = traps.same_as(dx, wrong) or ("stats-as-constants" if mean_path_lost(
                dx, dy * gamma, xhat, rstd, axis=0) else None)  # that mistake, not any broken sum
            raise Fail(f"The columns of `dx` from {BWD} {what} {values.round(4)}, not 0: the "
                       "invariances every BatchNorm gradient has."
                       + (f" {QUESTION.trap(trap).explanation}" if trap else ""), trap)
    expected = ctx.ref.batchnorm_backward(dy, x, gamma, mean, rstd)[0]
    ctx.expect_array("dx", dx, expected, BWD)  # the properties hold for zeros too: values count


@QUESTION.check("dgamma and dbeta", points=2, hints=(
    "gamma and beta are shared by every example of the batch: each gradient collects one "
    "contribution per example.",
    "One number per feature, summed over the first axis.",
))
def param_values(ctx):
    x = probes.batch(ctx.rng, 6, 4)
    check_gradients(ctx, (1, 2), x, *probes.params(ctx.rng, 4), 0.0)


@QUESTION.check("edge sizes (N = 2, D = 1, a 256 x 32 batch): forward and backward", points=1, hints=(
    "With N = 2 each feature's two values normalise to -1 and +1 (eps = 0); with D = 1 there "
    "is one feature and nothing else changes.",
    "Keep every array 2-D and reduce with explicit axes, so that small sizes behave like any "
    "other.",
))
def edge_sizes(ctx):
    for n, d in ((2, 3), (4, 1), (256, 32)):
        args = problem(ctx.rng, n, d)
        check_forward(ctx, (0, 1, 2, 3, 4), *args, True, MOMENTUM, EPS, example=False)
        check_gradients(ctx, (0, 1, 2), args[0], args[1], args[2], EPS, example=False)


@QUESTION.check("inputs left unchanged, the running averages included (and the answers right)",
                points=1, hints=(
    "Does your forward update running_mean or running_var in place, as PyTorch's buffers are?",
    "Return the new running averages as new arrays; build results in new arrays, or copy first.",
))
def inputs_unchanged(ctx):
    x, gamma, beta, rm, rv = problem(ctx.rng, 5, 4)
    names = ["x", "gamma", "beta", "running_mean", "running_var"]
    calls = [(FWD, (x, gamma, beta, rm, rv, training, MOMENTUM, EPS), names,
              ctx.ref.batchnorm_forward(x, gamma, beta, rm, rv, training, MOMENTUM, EPS))
             for training in (True, False)]
    mean, rstd = train_cache(ctx, x, gamma, beta, EPS)
    dy = upstream(ctx.rng, x.shape)
    calls.append((BWD, (dy, x, gamma, mean, rstd), ["dy", "x", "gamma", "mean", "rstd"],
                  ctx.ref.batchnorm_backward(dy, x, gamma, mean, rstd)))
    ctx.expect_inputs_unchanged(calls)
