"""reparameterisation's traps: each known-wrong answer on a check's own inputs, read off the
reference's, and how a failure is given its name."""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.context import RTOL
from backprop_traps.grader.engine.sameness import same_as  # noqa: F401 (the one rule; traps.same_as too)
from backprop_traps.grader.engine.question import Fail, Trap
from backprop_traps.grader.checks.reparameterisation.probes import GRADS, _close, diagnose_pathwise
from backprop_traps.grader.engine.trap_feedback import named_failure

TRAPS = [
    Trap("sample-as-constant", "The sample is treated as a constant, so no gradient passes "
         "through it. With the noise drawn first, z = mu + sigma * eps is a differentiable "
         "function of mu and sigma: dz/dmu = 1 and dz/dsigma = eps. Per sample, dmu is f'(z) and "
         "dsigma is f'(z) times eps."),
    Trap("sigma-grad-from-z", "dsigma uses z (or z - mu) where eps belongs. The derivative of "
         "z = mu + sigma * eps with respect to sigma is eps = (z - mu) / sigma, the noise itself: "
         "the pathwise dsigma is f'(z) times eps, and the score function's is f(z) times "
         "(eps squared - 1) / sigma."),
    Trap("score-missing-sigma-term", "The score function's dsigma misses the -1/sigma term. "
         "log N(z; mu, sigma^2) contains -log sigma (from the normaliser), so its derivative "
         "with respect to sigma is (eps squared - 1) / sigma, not eps squared / sigma. That term "
         "is what makes the score average to 0: without it, a constant f, whose expectation does "
         "not depend on sigma, gets the gradient f / sigma."),
    Trap("temperature-after-softmax", "The temperature is applied after the softmax, to the "
         "probabilities. It divides the noisy logits before it: y = softmax((logits + gumbel) / "
         "tau). Dividing the probabilities by tau gives rows that sum to 1 / tau, and neither that "
         "nor a second softmax gets sharper as tau falls."),
    Trap("backward-missing-temperature", "dlogits misses the chain rule through the division "
         "by tau. With h = (logits + gumbel) / tau and y = softmax(h), softmax's backward gives "
         "the gradient at h, y * (dy - <dy, y>) per row, and dh/dlogits = 1 / tau: divide by "
         "tau, once."),
    Trap("log-sigma-chain-missing", "dlog_sigma is the gradient with respect to sigma, not log "
         "sigma: the chain rule's factor dsigma/dlog_sigma = sigma is missing (or divides). With "
         "sigma = exp(log_sigma), z = mu + exp(log_sigma) * eps moves by sigma * eps per unit of "
         "log sigma, so the pathwise dlog_sigma is f'(z) times sigma times eps."),
    Trap("overflow", "y is not finite for large (logits + gumbel) / tau: exp overflows past "
         "about 709 (a logit of 40 at tau = 0.05 is 800). Subtract each row's max from h before "
         "exp: softmax does not change, and every exponent is at most 0."),
]
EXPLANATION = {t.id: t.explanation for t in TRAPS}


def pathwise_traps(ctx, mu, sigma, eps, coef) -> dict:
    """{"dmu" | "dsigma": {trap: [wrong values]}}."""
    dmu, _ = ctx.ref.pathwise_grad(mu, sigma, eps, coef)   # f'(z)
    z = mu + sigma * eps
    return {"dmu": {"sample-as-constant": [np.zeros_like(eps)]},
            "dsigma": {"sample-as-constant": [np.zeros_like(eps)],
                       "sigma-grad-from-z": [dmu * z, dmu * (z - mu)]}}


def score_traps(ctx, mu, sigma, eps, coef) -> dict:
    z = mu + sigma * eps
    fz = ctx.ref.f(z, coef)
    _, dsigma = ctx.ref.score_function_grad(mu, sigma, eps, coef)
    return {"dmu": {},
            "dsigma": {"score-missing-sigma-term": [dsigma + fz / sigma],
                       "sigma-grad-from-z": [fz * (z ** 2 - 1.0) / sigma]}}


def forward_traps(ctx, logits, gumbel, tau) -> dict:
    s = ctx.ref.gumbel_softmax_forward(logits, gumbel, 1.0)  # N, K; softmax with no temperature
    return {"temperature-after-softmax": [s / tau, s ** (1.0 / tau),
                                          ctx.ref.gumbel_softmax_forward(s, np.zeros_like(s), tau)]}


def backward_traps(ctx, dy, y, tau) -> dict:
    right = ctx.ref.gumbel_softmax_backward(dy, y, tau)
    return {"backward-missing-temperature": [right * tau, right * tau * tau]}


def _ratio(score, path):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.var(score) / np.var(path)


def diagnose_ratio(ctx, got, mu, sigma, eps, coef):
    """(trap or None, what is off or None) for a failing variance ratio: each entry is the
    right one or a trap's (the ratio of a wrong estimator's variance), upside down, of
    standard deviations, or not finite because the pathwise estimates do not vary."""
    if not (isinstance(got, np.ndarray) and got.shape == (2,) and got.dtype.kind in "fiu"):
        return None, None
    got = got.astype(np.float64)
    if not np.all(np.isfinite(got)):
        for i in (0, 1):
            trap, shown = diagnose_pathwise(ctx, i)
            if trap == "sample-as-constant":
                return trap, ("Your ratio divides by a pathwise variance of 0. " + shown)
        return None, None
    right = ctx.ref.variance_ratio(mu, sigma, eps, coef)
    if np.all(got != 0) and _close(1.0 / got, right):
        return None, ("Yours is upside down: pathwise over score function. The ratio puts the "
                      "score function's variance on top.")
    if _close(got ** 2, right):
        return None, "Yours is a ratio of standard deviations; the ratio is of variances."
    path = ctx.ref.pathwise_grad(mu, sigma, eps, coef)
    score = ctx.ref.score_function_grad(mu, sigma, eps, coef)
    wrong_path, wrong_score = pathwise_traps(ctx, mu, sigma, eps, coef), score_traps(ctx, mu, sigma, eps, coef)
    for trap in {t for w in (wrong_path, wrong_score) for forms in w.values() for t in forms}:
        matched = []
        for i, name in enumerate(GRADS):
            paths = [path[i]] + wrong_path[name].get(trap, [])
            scores = [score[i]] + wrong_score[name].get(trap, [])
            forms = [_ratio(s, p) for p in paths for s in scores]   # forms[0]: the right ratio
            hit = [j for j, r in enumerate(forms) if np.isfinite(r) and np.isclose(got[i], r, rtol=RTOL)]
            if not hit:
                break
            matched.append(0 not in hit)
        else:
            if any(matched):
                return trap, ("Your ratio is what the estimators give with this mistake in them "
                              "(variance_ratio itself may be right).")
    return None, None


def fail(failure: Fail, where: str | None, got, candidates: dict, diagnose) -> Fail:
    """``failure`` with the input and the trap recognised, if any (``named_failure``)."""
    return named_failure(failure, where, got, candidates, diagnose, same_as, EXPLANATION)


def log_sigma_traps(ctx, mu, log_sigma, eps, coef) -> dict:
    """{"dmu" | "dsigma": {trap: [wrong values]}} for pathwise_grad_log_sigma (its second output,
    dlog_sigma, sits where the pathwise dsigma does)."""
    sigma = float(np.exp(log_sigma))
    _, dsigma = ctx.ref.pathwise_grad(mu, sigma, eps, coef)   # f'(z) eps
    return {"dmu": {"sample-as-constant": [np.zeros_like(eps)]},
            "dsigma": {"sample-as-constant": [np.zeros_like(eps)],
                       "log-sigma-chain-missing": [dsigma, dsigma / sigma]}}
