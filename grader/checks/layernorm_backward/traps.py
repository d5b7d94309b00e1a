"""layernorm_backward's traps: each known-wrong answer on a check's own inputs, read off the
reference's answers where possible (a wrong rstd put back into the reference's backward,
BatchNorm as the reference on x transposed), and how a failure is given its name."""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.sameness import same_as  # noqa: F401 (the one rule; traps.same_as too)
from backprop_traps.grader.engine.question import Fail, Trap
from backprop_traps.grader.checks.layernorm_backward.probes import EPS
from backprop_traps.grader.engine.trap_feedback import named_failure

TRAPS = [
    Trap("stats-as-constants", "The backward treats the mean, the variance, or both as "
         "constants. Both are computed from x, so moving one x_i moves them, and through them "
         "every output of the row: x-hat has three paths back to x (directly, through the mean, "
         "through the variance). Keep all three: with g = dy times gamma, dx is rstd times (g, "
         "minus the row mean of g, minus x-hat times the row mean of g times x-hat). Check: "
         "every row of dx sums to zero."),
    Trap("wrong-axis", "A reduction runs over the wrong axis. LayerNorm normalises each row over "
         "its D features (the last axis): one mean and one rstd per row, and in the backward both "
         "means (of g and of g times x-hat) are taken along each row. Reducing over axis 0, the "
         "batch, is BatchNorm. And N per-row values must be used as a column (keep the reduced "
         "axis): a flat array of N numbers broadcasts across the features instead."),
    Trap("unbiased-variance", "The variance is divided by D - 1 (the unbiased sample "
         "variance). LayerNorm uses the biased variance, divided by D, as PyTorch's layer_norm "
         "does (numpy's var with its default ddof = 0; torch.var defaults to D - 1). In the "
         "backward the variance's term divides by D as well."),
    Trap("dgamma-not-summed", "dgamma or dbeta is not the sum over the batch. Every row uses "
         "the same gamma and beta, so each gradient adds up one contribution per row: dbeta is dy "
         "summed over the rows, dgamma is dy times x-hat summed over the rows. Not their mean (a "
         "1/N, if any, is already inside dy), not one row, not the unreduced (N, D) array."),
    Trap("eps-outside-sqrt", "eps is added outside the square root: 1 / (sqrt(var) + eps) "
         "instead of 1 / sqrt(var + eps). For ordinary rows the two barely differ; for a row of "
         "(nearly) equal values the variance is about 0, and yours gives 1 / eps (100,000 for "
         "eps = 1e-5) instead of 1 / sqrt(eps) (about 316). Add eps to the variance, then take "
         "the square root, as PyTorch's layer_norm does."),
    Trap("eps-missing", "eps is missing: rstd is 1 / sqrt(var), so a row of equal values "
         "divides 0 by 0 and a nearly constant one blows up. rstd is 1 / sqrt(var + eps). In the "
         "backward, use the rstd the forward returned (eps is inside it) instead of recomputing "
         "the spread from x."),
]
EXPLANATION = {t.id: t.explanation for t in TRAPS}


def forward_traps(ctx, x, gamma, beta, eps) -> dict:
    """{trap: [(y, mean, rstd), ...]}: each wrong forward, built from the reference's answer."""
    n, d = x.shape
    y, mean, rstd = ctx.ref.layernorm_forward(x, gamma, beta, eps)
    xc = ctx.ref.layernorm_forward(x, np.ones(d), np.zeros(d), eps)[0] / rstd[:, None]  # N, D
    var = np.maximum(1.0 / rstd ** 2 - eps, 0.0)  # N; the biased variance
    with np.errstate(divide="ignore", invalid="ignore"):
        wrong_rstd = {
            "unbiased-variance": 1.0 / np.sqrt(var * d / (d - 1) + eps) if d > 1 else np.full(n, np.nan),
            "eps-outside-sqrt": 1.0 / (np.sqrt(var) + eps),
            "eps-missing": 1.0 / np.sqrt(var),
        }
        wrong = {trap: [(xc * r[:, None] * gamma + beta, mean, r)] for trap, r in wrong_rstd.items()}
        bn_y, bn_mean, bn_rstd = ctx.ref.layernorm_forward(x.T, np.ones(n), np.zeros(n), eps)  # BatchNorm
    wrong["wrong-axis"] = [(bn_y.T * gamma + beta, bn_mean, bn_rstd)]
    if n == d:  # flat (N,) statistics broadcast across the features: mean, rstd or both
        row, flat = (mean[:, None], rstd[:, None]), (mean[None, :], rstd[None, :])
        for m, r in ((flat[0], flat[1]), (flat[0], row[1]), (row[0], flat[1])):
            wrong["wrong-axis"].append(((x - m) * r * gamma + beta, mean, rstd))
    return wrong


def backward_traps(ctx, dy, x, gamma, mean, rstd, eps=EPS) -> dict:
    """{"dx" | "dgamma" | "dbeta": {trap: [wrong values]}} on one input."""
    n, d = x.shape
    dx, dgamma, dbeta = ctx.ref.layernorm_backward(dy, x, gamma, mean, rstd)
    r = rstd[:, None]                                       # N, 1
    xhat = (x - mean[:, None]) * r                          # N, D
    g = dy * gamma                                          # N, D
    mean_term = r * g.mean(axis=1, keepdims=True)           # what the path through the mean takes off
    var_term = r * xhat * (g * xhat).mean(axis=1, keepdims=True)  # ... the path through the variance
    dx_forms = {"stats-as-constants": [r * g, dx + mean_term, dx + var_term],
                "wrong-axis": [r * (g - g.mean(axis=0) - xhat * (g * xhat).mean(axis=0))]}
    if d > 1:  # the variance's term divided by D - 1 instead of D
        dx_forms["unbiased-variance"] = [dx + var_term * (1.0 - d / (d - 1))]
    if n == d:  # flat (N,) row values broadcast across the features
        flat_r, flat_xhat = rstd[None, :], (x - mean[None, :]) * rstd[None, :]
        dx_forms["wrong-axis"] += [
            r * (g - g.mean(axis=1)[None, :] - xhat * (g * xhat).mean(axis=1)[None, :]),
            flat_r * (g - g.mean(axis=1)[None, :] - flat_xhat * (g * flat_xhat).mean(axis=1)[None, :])]
    p = dy * xhat                                           # N, D: dgamma's terms
    param_forms = {"dgamma": {"dgamma-not-summed": [p, p.mean(axis=0), p[0], p[-1]],
                              "wrong-axis": [p.sum(axis=1), p.mean(axis=1)]},
                   "dbeta": {"dgamma-not-summed": [dy, dy.mean(axis=0), dy[0], dy[-1]],
                             "wrong-axis": [dy.sum(axis=1), dy.mean(axis=1)]}}
    # a backward that recomputes the spread from x, without eps or with it outside the root
    var = np.maximum(1.0 / rstd ** 2 - eps, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        for trap, wrong_rstd in (("eps-missing", 1.0 / np.sqrt(var)),
                                 ("eps-outside-sqrt", 1.0 / (np.sqrt(var) + eps))):
            wdx, wdgamma, _ = ctx.ref.layernorm_backward(dy, x, gamma, mean, wrong_rstd)
            dx_forms[trap] = [wdx]
            param_forms["dgamma"][trap] = [wdgamma]
    return {"dx": dx_forms, **param_forms}


def fail(failure: Fail, where: str | None, got, candidates: dict, diagnose) -> Fail:
    """``failure`` with the input and the trap recognised, if any (``named_failure``)."""
    return named_failure(failure, where, got, candidates, diagnose, same_as, EXPLANATION)


