"""Hidden checks for reparameterisation: gradients through samples.

Shapes: eps, dmu, dsigma (S,); coef (P,), f's coefficients, lowest power first; logits,
gumbel, y, dy, dlogits (N, K); mu, sigma, tau floats. The noise is an input, so every answer
is deterministic and is checked per sample. The pathwise estimator is compared with central
differences of f(mu + sigma * eps) with the noise held fixed, the score function with f(z)
times central differences of log N(z; mu, sigma^2) with z held fixed, both means with the
exact gradient of E[f(z)] on noise whose moments match the normal's up to the fifth (exact
for a cubic f), Gumbel-softmax's backward with central differences of the reference forward
(``ctx.ref``, the solution notebook). A wrong answer is named by equality with a trap's form
on the same inputs, else by probes (``probes.py``). Each trap has a runnable
wrong answer in tests/answers/reparameterisation/.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.reparameterisation import probes, traps
from backprop_traps.grader.checks.reparameterisation.probes import (BWD, FWD, GRADS, LOG_PATH, PATH, RATIO, SCORE,
                                                     gaussian_problem, gumbel_problem,
                                                     moment_matched_noise, polynomial)
from backprop_traps.grader.checks.reparameterisation.traps import TRAPS, fail
from backprop_traps.grader.engine import gradcheck
from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail, Question

QUESTION = Question("reparameterisation", "Gradients through samples: reparameterisation, score "
                    "function, Gumbel-softmax", traps=TRAPS, difficulty="medium", grader_setup=True,
                    kinks={}, axes={name: ("sample s",) for name in ("dmu", "dsigma", "dlog_sigma")},
                    # fewer samples are still samples; fewer rows still a batch
                    shrink={"pathwise_grad": {"S": [(2, 0)]}, "score_function_grad": {"S": [(2, 0)]},
                            "pathwise_grad_log_sigma": {"S": [(2, 0)]},
                            "gumbel_softmax_backward": {"N": [(0, 0), (1, 0)]}})


# -- comparing ----------------------------------------------------------------------------
def as_samples(ctx, name, got, expected, fn):
    """``got`` as a finite float array of ``expected``'s shape; a single number where one per
    sample belongs is told so."""
    if np.ndim(got) == 0 and np.ndim(expected) == 1 and isinstance(got, (int, float, np.number, np.ndarray)):
        raise Fail(f"`{name}` from {fn} is one number; it must hold one estimate per sample, "
                   f"shape {np.shape(expected)} (the estimate is their mean, taken by the caller)")
    return ctx.as_array(name, got, expected, fn)


def expect_close(ctx, name, got, expected, fn, where, candidates=None, diagnose=None, tol=None):
    """``got`` must be an array of ``expected``'s shape, within ``tol`` of it relative to its
    largest entry (``gradcheck.rel_error``; central differences' own error is ~1e-9), or, with
    ``tol=None``, close entry by entry (the reference's own answer)."""
    try:
        got = as_samples(ctx, name, got, expected, fn)
        ok = (gradcheck.rel_error(got, expected) <= tol if tol is not None
              else ctx.close(got, expected))
        if not ok:
            raise ctx.mismatch(name, got, expected, fn)
    except Fail as failure:
        raise fail(failure, where, got, candidates or {}, diagnose) from None
    return got


def pair(ctx, fn, args, where):
    """The learner's ``fn(*args)`` as a pair (dmu, dsigma)."""
    try:
        return ctx.unpack(ctx.call(fn, *args), 2, fn, "dmu, dsigma")
    except Fail as failure:
        raise Fail(f"{failure.feedback.rstrip('.')}; input {where}.") from None


def describe(mu, sigma, eps, coef):
    return f"mu={mu:.3g}, sigma={sigma:.3g}, S={np.size(eps)}, f of degree {len(coef) - 1}"


def check_estimator(ctx, fn, by_differences, wrong_forms, diagnose, mu, sigma, eps, coef):
    """dmu and dsigma, sample by sample, against central differences."""
    where = describe(mu, sigma, eps, coef)
    got = pair(ctx, fn, (mu, sigma, eps, coef), where)
    expected = by_differences(ctx, mu, sigma, eps, coef)
    wrong = wrong_forms(ctx, mu, sigma, eps, coef)
    for i, name in enumerate(GRADS):
        expect_close(ctx, name, got[i], expected[i], fn, where, wrong[name],
                     lambda i=i: diagnose(ctx, i), tol=gradcheck.GRAD_RTOL)


def check_mean(ctx, fn, wrong_forms, diagnose, mu, sigma, eps, coef):
    """The mean of dmu and dsigma against the exact gradient of E[f(z)] (moment-matched eps)."""
    where = describe(mu, sigma, eps, coef) + ", noise with the normal's first five moments"
    got = pair(ctx, fn, (mu, sigma, eps, coef), where)
    exact = probes.exact_gradient(ctx, mu, sigma, coef)
    wrong = wrong_forms(ctx, mu, sigma, eps, coef)
    for i, name in enumerate(GRADS):
        try:
            value = as_samples(ctx, name, got[i], eps, fn)
        except Fail as failure:
            raise fail(failure, where, got[i], wrong[name], lambda i=i: diagnose(ctx, i)) from None
        mean = float(value.mean())
        if abs(mean - exact[i]) > 1e-6 * max(1.0, abs(exact[i])):
            raise fail(Fail(f"The mean of `{name}` from {fn} is {mean:.6g}; the exact gradient of "
                            f"E[f(z)] with respect to {name[1:]} is {exact[i]:.6g}. On this noise an "
                            "unbiased estimator's mean is exact"), where, value, wrong[name],
                       lambda i=i: diagnose(ctx, i))


def moment_problem(ctx, degree, pairs=6):
    """(mu, sigma, eps, coef) on moment-matched noise; for degree >= 1 both exact gradients are
    at least 0.3 in size, so that zeros (or the noise itself, whose mean is 0) cannot match."""
    while True:
        mu, sigma, _, coef = gaussian_problem(ctx.rng, 1, degree)
        if degree == 0 or min(abs(g) for g in probes.exact_gradient(ctx, mu, sigma, coef)) >= 0.3:
            return mu, sigma, moment_matched_noise(ctx.rng, pairs), coef


# -- checks: the Gaussian estimators --------------------------------------------------------
@QUESTION.check("pathwise: per-sample gradients through z = mu + sigma * eps", points=3, hints=(
    "Draw the noise first: z = mu + sigma * eps is then an ordinary function of mu and sigma, "
    "and the chain rule goes through it.",
    "What is the derivative of z with respect to sigma? It is not z.",
    "Nudge mu a little with eps held fixed: how much does f(z) move, sample by sample?",
))
def pathwise_values(ctx):
    for samples, degree in ((12, 3), (9, 4)):
        check_estimator(ctx, PATH, probes.pathwise_by_differences, traps.pathwise_traps,
                        probes.diagnose_pathwise, *gaussian_problem(ctx.rng, samples, degree))


@QUESTION.check("pathwise with respect to log sigma (sigma = exp(log_sigma), as VAE encoders output it)",
                points=2, hints=(
    "An encoder outputs log sigma, so the parameter you differentiate is log sigma, not sigma.",
    "z = mu + exp(log_sigma) * eps: by the chain rule, dz/dlog_sigma = dz/dsigma * dsigma/dlog_sigma.",
    "dsigma/dlog_sigma = exp(log_sigma) = sigma: the pathwise dlog_sigma is f'(z) * sigma * eps.",
))
def pathwise_log_sigma(ctx):
    for samples, degree, log_sigma in ((10, 3, float(ctx.rng.uniform(0.4, 1.2))),
                                       (8, 2, float(ctx.rng.uniform(-2.0, -0.4)))):
        mu, _, eps, coef = gaussian_problem(ctx.rng, samples, degree)
        where = describe(mu, float(np.exp(log_sigma)), eps, coef) + f" (log_sigma={log_sigma:.3g})"
        got = ctx.unpack(ctx.call(LOG_PATH, mu, log_sigma, eps, coef), 2, LOG_PATH, "dmu, dlog_sigma")
        expected = probes.log_sigma_by_differences(ctx, mu, log_sigma, eps, coef)
        wrong = traps.log_sigma_traps(ctx, mu, log_sigma, eps, coef)
        for i, name in enumerate(("dmu", "dlog_sigma")):
            expect_close(ctx, name, got[i], expected[i], LOG_PATH, where, wrong[GRADS[i]],
                         lambda i=i: probes.diagnose_log_sigma(ctx, i), tol=gradcheck.GRAD_RTOL)


@QUESTION.check("pathwise: the mean is the exact gradient for quadratic and cubic f", points=2, hints=(
    "For f(z) = z^2, E[f(z)] = mu^2 + sigma^2: the gradient is (2 mu, 2 sigma).",
    "On noise with mean 0 and mean square 1, your per-sample values must average to exactly that.",
))
def pathwise_mean(ctx):
    for degree in (2, 3):
        check_mean(ctx, PATH, traps.pathwise_traps, probes.diagnose_pathwise,
                   *moment_problem(ctx, degree))


@QUESTION.check("score function: f(z) times the gradient of log N(z; mu, sigma^2)", points=3, hints=(
    "Here the sample is held fixed and the derivative acts on the density: write log N(z; mu, "
    "sigma^2) out in full, normaliser included.",
    "Differentiate each of its terms with respect to mu and to sigma, then write the result "
    "with eps = (z - mu) / sigma.",
    "f is evaluated, never differentiated, in this estimator.",
))
def score_values(ctx):
    for samples, degree in ((12, 3), (9, 2)):
        check_estimator(ctx, SCORE, probes.score_by_differences, traps.score_traps,
                        probes.diagnose_score, *gaussian_problem(ctx.rng, samples, degree))


@QUESTION.check("score function: zero mean for a constant f, the exact gradient for quadratic "
                "and cubic f", points=2, hints=(
    "The expectation of a constant does not depend on mu or sigma, so its gradient is 0: the "
    "score must average to 0.",
    "Which term of the derivative of log N with respect to sigma makes its average 0?",
))
def score_mean(ctx):
    mu, sigma, eps, _ = moment_problem(ctx, 0)
    check_mean(ctx, SCORE, traps.score_traps, probes.diagnose_score, mu, sigma, eps,
               np.array([ctx.rng.uniform(1.0, 3.0)]))
    for degree in (2, 3):
        check_mean(ctx, SCORE, traps.score_traps, probes.diagnose_score,
                   *moment_problem(ctx, degree))


@QUESTION.check("both estimators on edge cases: S = 1, eps = 0, constant and linear f, "
                "sigma = 1e-3 and 50", points=1, hints=(
    "A constant f has a zero pathwise gradient but not a zero score-function one: each sample's "
    "score is nonzero, only its average is 0.",
    "Keep every result an array of S values, even for S = 1, and let eps = 0 flow through the "
    "same formula as any other value.",
))
def estimator_edges(ctx):
    rng = ctx.rng
    eps_with_zeros = rng.standard_normal(7)
    eps_with_zeros[[1, 4]] = 0.0
    cases = [(0.7, 1.3, np.array([0.0]), polynomial(rng, 3)),
             (-0.4, 0.8, np.array([1.1]), polynomial(rng, 2)),
             (0.5, 1.1, eps_with_zeros, np.array([0.3, rng.uniform(0.5, 1.5)])),
             (1.5, 0.9, rng.standard_normal(5), np.array([rng.uniform(1.0, 2.0)])),
             (0.0, 1e-3, rng.standard_normal(6), polynomial(rng, 3)),
             (-1.0, 50.0, rng.standard_normal(6), polynomial(rng, 4))]
    for fn, diagnose in ((PATH, probes.diagnose_pathwise), (SCORE, probes.diagnose_score)):
        for mu, sigma, eps, coef in cases:
            where = describe(mu, sigma, eps, coef)
            got = pair(ctx, fn, (mu, sigma, eps, coef), where)
            expected = getattr(ctx.ref, fn)(mu, sigma, eps, coef)
            wrong = (traps.pathwise_traps if fn == PATH else traps.score_traps)(ctx, mu, sigma, eps, coef)
            for i, name in enumerate(GRADS):
                expect_close(ctx, name, got[i], expected[i], fn, where, wrong[name],
                             lambda i=i, d=diagnose: d(ctx, i))


@QUESTION.check("variance ratio: score function over pathwise, per-sample variances", points=2, hints=(
    "Compute both estimators on the same samples, then the variance of each one's per-sample "
    "values: one ratio for mu, one for sigma.",
    "Score function over pathwise: the ratio says how many times more samples the score "
    "function needs for the same accuracy, usually far more than 1.",
))
def ratio_values(ctx):
    for degree in (2, 3, 4):
        mu, sigma, eps, coef = gaussian_problem(ctx.rng, 200, degree)
        where = describe(mu, sigma, eps, coef)
        try:
            got = ctx.call(RATIO, mu, sigma, eps, coef)
        except Fail as failure:
            raise Fail(f"{failure.feedback.rstrip('.')}; input {where}.") from None
        expected = ctx.ref.variance_ratio(mu, sigma, eps, coef)
        expect_close(ctx, "ratio", got, expected, RATIO, where, {},
                     lambda got=got, args=(mu, sigma, eps, coef): traps.diagnose_ratio(ctx, got, *args))


# -- checks: Gumbel-softmax --------------------------------------------------------------
def check_forward(ctx, logits, gumbel, tau, where=None):
    n, k = logits.shape
    where = where or f"N={n}, K={k}, tau={tau:g}"
    try:
        got = ctx.call(FWD, logits, gumbel, tau)
    except Fail as failure:
        raise Fail(f"{failure.feedback.rstrip('.')}; input {where}.") from None
    expect_close(ctx, "y", got, ctx.ref.gumbel_softmax_forward(logits, gumbel, tau), FWD, where,
                 traps.forward_traps(ctx, logits, gumbel, tau), lambda: probes.diagnose_forward(ctx))


def check_backward(ctx, logits, gumbel, tau):
    n, k = logits.shape
    where = f"N={n}, K={k}, tau={tau:g}"
    y = ctx.ref.gumbel_softmax_forward(logits, gumbel, tau)
    dy = upstream(ctx.rng, y.shape)
    try:
        got = ctx.call(BWD, dy, y, tau)
    except Fail as failure:
        raise Fail(f"{failure.feedback.rstrip('.')}; input {where}.") from None
    try:
        ctx.expect_gradient("dlogits", got, lambda v: ctx.ref.gumbel_softmax_forward(v, gumbel, tau),
                            logits, dy, BWD, traps=traps.backward_traps(ctx, dy, y, tau))
    except Fail as failure:
        raise fail(failure, where, got, {}, lambda: probes.diagnose_backward(ctx)) from None


@QUESTION.check("Gumbel-softmax forward: softmax((logits + gumbel) / tau), row by row", points=2, hints=(
    "Add the noise to the logits, then divide by the temperature, then take the softmax of each "
    "row.",
    "Every row of y is a probability vector: it sums to 1, whatever tau is.",
))
def forward_values(ctx):
    for (n, k), tau in (((5, 7), 0.5), ((6, 6), 2.0)):
        check_forward(ctx, *gumbel_problem(ctx.rng, n, k), tau)


@QUESTION.check("Gumbel-softmax forward at a small temperature and with huge logits", points=1, hints=(
    "At tau = 0.05 a logit of 40 becomes 800: what is exp(800) in float64?",
    "Subtracting a row's max from every entry does not change its softmax.",
))
def forward_small_temperature(ctx):
    logits, gumbel = gumbel_problem(ctx.rng, 4, 9, scale=10.0)
    logits[0, 3] = 60.0  # far above the rest of its row: y[0] is one-hot to many digits
    check_forward(ctx, logits, gumbel, 0.05)
    logits, gumbel = gumbel_problem(ctx.rng, 3, 5)
    check_forward(ctx, logits * 5e3, gumbel, 1.0)


@QUESTION.check("Gumbel-softmax backward: the Jacobian by finite differences", points=3, hints=(
    "Split it in two: softmax's backward from y gives the gradient at h = (logits + gumbel) / "
    "tau; then the division by tau.",
    "Softmax's backward for one row is y times (dy minus the dot product of dy and y).",
    "Every row of dlogits sums to 0: adding a constant to a row of logits changes nothing.",
))
def backward_values(ctx):
    for (n, k), tau in (((5, 7), 0.5), ((6, 6), 2.0)):
        check_backward(ctx, *gumbel_problem(ctx.rng, n, k), tau)


@QUESTION.check("Gumbel-softmax edge cases: K = 1, N = 1, tau = 1, tied logits, a 64 x 300 batch",
                points=1, hints=(
    "With one category y is 1 and dlogits is 0, for any tau.",
    "Reduce with explicit axes and keep the reduced axis, so that one row or one column behaves "
    "like any other size.",
))
def gumbel_edges(ctx):
    tied = np.full((2, 4), 1.5), np.zeros((2, 4))
    for logits, gumbel, tau in ((*gumbel_problem(ctx.rng, 3, 1), 0.7),
                                (*gumbel_problem(ctx.rng, 1, 6), 1.0),
                                (*tied, 0.3),
                                (*gumbel_problem(ctx.rng, 64, 300), 0.8)):
        check_forward(ctx, logits, gumbel, tau)
        check_backward(ctx, logits, gumbel, tau)


@QUESTION.check("inputs left unchanged (and the answers still right)", points=1, hints=(
    "Does any function change eps, coef, logits, gumbel, dy or y in place (-=, /=)?",
    "Build results in new arrays, or copy first.",
))
def inputs_unchanged(ctx):
    mu, sigma, eps, coef = gaussian_problem(ctx.rng, 6, 3)
    logits, gumbel = gumbel_problem(ctx.rng, 3, 4)
    y = ctx.ref.gumbel_softmax_forward(logits, gumbel, 0.5)
    dy = upstream(ctx.rng, y.shape)
    args = (mu, sigma, eps, coef)
    names = ["mu", "sigma", "eps", "coef"]
    ctx.expect_inputs_unchanged([
        (PATH, args, names, ctx.ref.pathwise_grad(*args)),
        (LOG_PATH, (mu, float(np.log(sigma)), eps, coef), ["mu", "log_sigma", "eps", "coef"],
         ctx.ref.pathwise_grad_log_sigma(mu, float(np.log(sigma)), eps, coef)),
        (SCORE, args, names, ctx.ref.score_function_grad(*args)),
        (RATIO, args, names, ctx.ref.variance_ratio(*args)),
        (FWD, (logits, gumbel, 0.5), ["logits", "gumbel", "tau"], y),
        (BWD, (dy, y, 0.5), ["dy", "y", "tau"], ctx.ref.gumbel_softmax_backward(dy, y, 0.5)),
    ])
