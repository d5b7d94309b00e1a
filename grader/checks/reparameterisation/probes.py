"""Inputs, known-wrong answers and behavioural probes for the reparameterisation checks.

Shapes: eps, dmu, dsigma (S,); coef (P,), lowest power first; logits, gumbel, y, dy,
dlogits (N, K); mu, sigma, tau floats.

- Inputs: Gaussian problems (mu, sigma, noise, a polynomial f whose gradient is bounded away
  from 0); noise whose moments match the standard normal's up to the fifth, so that an
  unbiased estimator's mean is exact for a cubic f; Gumbel-softmax rows.
- Independent answers: central differences with the noise held fixed (pathwise), central
  differences of log N(z; mu, sigma^2) with z held fixed (score function), the exact gradient
  of E[f(z)] (Gauss-Hermite quadrature of f, then central differences in mu and sigma).
- Trap forms: each known-wrong answer on a check's own inputs, read off the reference's.
- Probes, run only after a check has failed, to name what a formula match did not: f(z) = z
  (the pathwise dsigma must be eps itself), a constant f (the score's dsigma is
  f (eps^2 - 1) / sigma), a row with logits + gumbel = [ln 3, ln 2] at tau = 0.5, a row of
  logits 1000 apart, and the same (dy, y) at tau = 1 and tau = 0.25.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.context import ATOL, RTOL
from backprop_traps.grader.engine.question import Fail

PATH, SCORE, RATIO = "pathwise_grad", "score_function_grad", "variance_ratio"
LOG_PATH = "pathwise_grad_log_sigma"  # sigma = exp(log_sigma), as a VAE encoder outputs it
FWD, BWD = "gumbel_softmax_forward", "gumbel_softmax_backward"
GRADS = ("dmu", "dsigma")  # each estimator's answer, in order
H = 1e-6                   # central differences' step, relative to the parameter's size


def fmt(values) -> str:
    return np.array2string(np.asarray(values, dtype=np.float64), precision=4, suppress_small=True,
                           max_line_width=100)


# -- inputs ----------------------------------------------------------------------------------
def polynomial(rng, degree):
    """coef (degree + 1,): entries in [-1.5, 1.5], the leading one at least 0.5 in size."""
    coef = rng.uniform(-1.5, 1.5, size=degree + 1)
    if degree:
        coef[-1] = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 1.5)
    return coef


def gaussian_problem(rng, samples, degree):
    """(mu, sigma, eps, coef): mu in [-2, 2], sigma in [0.5, 2], eps (S,) standard normal."""
    return (float(rng.uniform(-2.0, 2.0)), float(rng.uniform(0.5, 2.0)),
            rng.standard_normal(samples), polynomial(rng, degree))


def moment_matched_noise(rng, pairs=6):
    """eps (2 * pairs + 2,), symmetric (odd moments 0) with mean square exactly 1 and mean
    fourth power exactly 3, as the standard normal's: an unbiased estimator whose per-sample
    value is a polynomial of degree <= 5 in eps has, on this noise, exactly the right mean.
    The magnitudes are c * r_i (r_i random) and one pair c * t, c and t solving both moments."""
    r2 = rng.uniform(0.3, 1.5, size=pairs) ** 2
    a, b, k = r2.sum(), (r2 ** 2).sum(), pairs + 1        # k = half the number of samples
    # with u = t^2: (k - 3) u^2 - 6 a u + (k b - 3 a^2) = 0, the positive root
    u = (6 * a + np.sqrt(36 * a * a - 4 * (k - 3) * (k * b - 3 * a * a))) / (2 * (k - 3))
    c2 = k / (a + u)
    half = np.sqrt(c2 * np.append(r2, u))
    eps = np.concatenate([half, -half])
    return rng.permutation(eps)


def gumbel_problem(rng, n, k, scale=2.0):
    """(logits, gumbel), each (N, K): logits with per-row offsets; Gumbel(0, 1) noise."""
    logits = rng.uniform(-2.0, 2.0, size=(n, 1)) + scale * rng.standard_normal((n, k))
    return logits, -np.log(-np.log(rng.uniform(1e-12, 1.0, size=(n, k))))


# -- independent answers ----------------------------------------------------------------------
def central(fn, value):
    """Central difference of ``fn`` (any array) at the float ``value``."""
    h = H * max(1.0, abs(value))
    return (fn(value + h) - fn(value - h)) / (2 * h)


def pathwise_by_differences(ctx, mu, sigma, eps, coef):
    """(dmu, dsigma) per sample: f(mu + sigma * eps) differentiated with the noise held fixed."""
    return (central(lambda m: ctx.ref.f(m + sigma * eps, coef), mu),
            central(lambda s: ctx.ref.f(mu + s * eps, coef), sigma))


def log_normal(z, mu, sigma):
    """log N(z; mu, sigma^2), the density's definition."""
    return -0.5 * ((z - mu) / sigma) ** 2 - np.log(sigma) - 0.5 * np.log(2 * np.pi)


def score_by_differences(ctx, mu, sigma, eps, coef):
    """(dmu, dsigma) per sample: f(z) times central differences of log N(z; mu, sigma^2), z fixed."""
    z = mu + sigma * eps
    fz = ctx.ref.f(z, coef)
    return (fz * central(lambda m: log_normal(z, m, sigma), mu),
            fz * central(lambda s: log_normal(z, mu, s), sigma))


def exact_gradient(ctx, mu, sigma, coef):
    """(d/dmu, d/dsigma) of E[f(z)], z ~ N(mu, sigma^2): the expectation by Gauss-Hermite
    quadrature (exact for a polynomial), then central differences in mu and sigma."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(len(coef) + 2)
    weights = weights / weights.sum()

    def expectation(m, s):
        return float(np.sum(weights * ctx.ref.f(m + s * nodes, coef)))
    return (central(lambda m: expectation(m, sigma), mu), central(lambda s: expectation(mu, s), sigma))


# -- trap forms: the wrong answers on a check's inputs ------------------------------------------


# -- probes: the learner's functions on purpose-built inputs ------------------------------------
def _answer(ctx, fn, args, index, shape):
    """The learner's ``fn(*args)`` (item ``index`` of a pair, unless None) if it is a finite
    float array of ``shape``, else None."""
    try:
        got = ctx.call(fn, *args)
    except Fail:
        return None
    if index is not None:
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return None
        got = got[index]
    ok = isinstance(got, np.ndarray) and got.shape == shape and got.dtype.kind in "fiu"
    return got.astype(np.float64) if ok and np.all(np.isfinite(got)) else None


def _close(a, b):
    return bool(np.allclose(a, b, rtol=RTOL, atol=ATOL))


PROBE_MU, PROBE_SIGMA = 3.0, 2.0
PROBE_EPS = np.array([-1.0, 0.5, 1.5, 2.0])  # z = [1, 4, 6, 7]


def diagnose_pathwise(ctx, index):
    """(trap or None, what the probe showed or None) for a failing pathwise dmu (0) or dsigma
    (1): with f(z) = z, dmu must be 1 and dsigma must be eps, sample by sample."""
    args = (PROBE_MU, PROBE_SIGMA, PROBE_EPS.copy(), np.array([0.0, 1.0]))
    got = _answer(ctx, PATH, args, index, PROBE_EPS.shape)
    if got is None:
        return None, None
    z = PROBE_MU + PROBE_SIGMA * PROBE_EPS
    shown = (f"On a probe with f(z) = z, mu = 3, sigma = 2 and eps = {fmt(PROBE_EPS)} (so "
             f"z = {fmt(z)}), your `{GRADS[index]}` is {fmt(got)}; it should be "
             f"{fmt(np.ones(4) if index == 0 else PROBE_EPS)}.")
    if _close(got, 0.0):
        return "sample-as-constant", shown
    if index == 1 and (_close(got, z) or _close(got, z - PROBE_MU)):
        return "sigma-grad-from-z", shown
    return None, None


SCORE_EPS = np.array([-1.5, -0.5, 0.5, 1.5])


def diagnose_score(ctx, index):
    """(trap or None, what the probe showed or None) for a failing score-function dmu (0) or
    dsigma (1): for a constant f = 2, dsigma must be 2 (eps^2 - 1) / sigma."""
    mu, sigma, c = 0.5, 0.5, 2.0
    args = (mu, sigma, SCORE_EPS.copy(), np.array([c]))
    got = _answer(ctx, SCORE, args, index, SCORE_EPS.shape)
    if got is None or index == 0:
        return None, None
    z = mu + sigma * SCORE_EPS
    right = c * (SCORE_EPS ** 2 - 1.0) / sigma
    shown = (f"On a probe with a constant f = 2, mu = 0.5, sigma = 0.5 and eps = {fmt(SCORE_EPS)}, "
             f"your `dsigma` is {fmt(got)}; it should be f (eps^2 - 1) / sigma = {fmt(right)}, "
             "which averages to 0 over normal noise, as the gradient of a constant must.")
    if _close(got, c * SCORE_EPS ** 2 / sigma):
        return "score-missing-sigma-term", shown
    if _close(got, c * (z ** 2 - 1.0) / sigma):
        return "sigma-grad-from-z", shown
    return None, None


PROBE_LOGITS, PROBE_GUMBEL = np.array([[0.0, np.log(2.0)]]), np.array([[np.log(3.0), 0.0]])
PROBE_SHOWN = "a probe row with logits + gumbel = [ln 3, ln 2] and tau = 0.5"


OVERFLOW_ROWS = np.array([[1000.0, 999.0, 0.0], [-1000.0, -1001.0, -2000.0]])


def diagnose_forward(ctx):
    """(trap or None, what the probes showed or None) for a failing forward."""
    try:  # two rows whose maxima lie 2000 apart: a max taken over the whole array fails the second
        raw = ctx.call(FWD, OVERFLOW_ROWS.copy(), np.zeros((2, 3)), 1.0)
    except Fail:
        raw = None
    if isinstance(raw, np.ndarray) and raw.dtype.kind == "f" and not np.all(np.isfinite(raw)):
        bad = sorted({int(i) for i in np.argwhere(~np.isfinite(raw))[:, 0]})
        return "overflow", (f"On probe rows of logits [1000, 999, 0] and [-1000, -1001, -2000] at tau = 1, "
                            f"your y is not finite in row{'s' * (len(bad) > 1)} {', '.join(map(str, bad))}; "
                            "each row should be about [0.731, 0.269, 0].")
    got = _answer(ctx, FWD, (PROBE_LOGITS.copy(), PROBE_GUMBEL.copy(), 0.5), None, (1, 2))
    if got is None:
        return None, None
    shown = f"On {PROBE_SHOWN}, your y is {fmt(got)}; it should be [9, 4] / 13 = {fmt([9 / 13, 4 / 13])}."
    s = np.array([[0.6, 0.4]])  # softmax([ln 3, ln 2])
    e = np.exp(s / 0.5)
    if any(_close(got, form) for form in (s / 0.5, s ** 2, e / e.sum())):
        return "temperature-after-softmax", shown
    if _close(got, s):
        return None, shown + " Yours ignores tau: divide logits + gumbel by it."
    if _close(got, [[0.2, 0.8]]):
        return None, shown + " Yours ignores the Gumbel noise: add it to the logits."
    for odds in (s, s ** 2):  # the odds of the softmax without tau (or squared), rescaled
        scale = got.sum() / odds.sum()
        if not _close(got.sum(), 1.0) and _close(got, scale * odds):
            return "temperature-after-softmax", shown + (
                f" Your row sums to {got.sum():.4g}, not 1: tau rescales the probabilities "
                "instead of the logits.")
    return None, None


def diagnose_backward(ctx):
    """(trap or None, what the probe showed or None): the same (dy, y) at tau = 1 and tau =
    0.25, where dlogits must grow 4 times."""
    y, dy = np.array([[0.5, 0.3, 0.2]]), np.array([[1.0, -1.0, 0.5]])
    at = [_answer(ctx, BWD, (dy.copy(), y.copy(), tau), None, (1, 3)) for tau in (1.0, 0.25)]
    if any(a is None for a in at) or _close(at[0], 0.0):
        return None, None
    shown = (f"On a probe, the same dy = {fmt(dy)} and y = {fmt(y)} give your dlogits {fmt(at[0])} "
             f"at tau = 1 and {fmt(at[1])} at tau = 0.25: it should grow 4 times (dlogits carries 1 / tau).")
    if _close(at[1], at[0]) or _close(at[1], 0.25 * at[0]):
        return "backward-missing-temperature", shown
    return None, None




def log_sigma_by_differences(ctx, mu, log_sigma, eps, coef):
    """(dmu, dlog_sigma) per sample: f(mu + exp(log_sigma) * eps) differentiated, noise fixed."""
    return (central(lambda m: ctx.ref.f(m + np.exp(log_sigma) * eps, coef), mu),
            central(lambda ls: ctx.ref.f(mu + np.exp(ls) * eps, coef), log_sigma))


def diagnose_log_sigma(ctx, index):
    """(trap or None, what the probe showed or None) for a failing dlog_sigma: with f(z) = z and
    sigma = 2, dlog_sigma must be sigma * eps = 2 eps; eps alone is dsigma (the chain rule's
    factor sigma missing)."""
    if index != 1:
        return None, None
    args = (PROBE_MU, float(np.log(PROBE_SIGMA)), PROBE_EPS.copy(), np.array([0.0, 1.0]))
    got = _answer(ctx, LOG_PATH, args, 1, PROBE_EPS.shape)
    if got is None:
        return None, None
    shown = (f"On a probe with f(z) = z, mu = 3, log_sigma = ln 2 (sigma = 2) and eps = {fmt(PROBE_EPS)}, "
             f"your `dlog_sigma` is {fmt(got)}; it should be {fmt(PROBE_SIGMA * PROBE_EPS)}.")
    if _close(got, PROBE_EPS):
        return "log-sigma-chain-missing", shown
    if _close(got, 0.0):
        return "sample-as-constant", shown
    return None, shown
