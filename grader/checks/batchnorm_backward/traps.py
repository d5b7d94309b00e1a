"""The wrong variants of batchnorm_backward, each computed on a check's own inputs, and how a
learner's answer is recognised as one of them.

Shapes: x, y, dy, dx (N, D); gamma, beta, running_mean, running_var, mean, rstd, dgamma,
dbeta (D,). Every form is read off the reference's own answers (``ctx.ref``, the solution
notebook) where it can be: a wrong rstd put back into the normalisation, the evaluation
forward where training was asked, LayerNorm's axis as the reference on x transposed.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.sameness import same_as  # noqa: F401 (the one rule; traps.same_as too)
from backprop_traps.grader.engine.question import Trap

FWD, BWD = "batchnorm_forward", "batchnorm_backward"
OUTPUTS = ("y", "mean", "rstd", "new_running_mean", "new_running_var")  # the forward's answer
GRADS = ("dx", "dgamma", "dbeta")                                         # the backward's answer

TRAPS = [
    Trap("stats-as-constants", "The batch mean and variance are treated as constants in the "
         "training backward. Both are computed from every example of the batch, so moving one "
         "x moves them, and through them every output of that feature: x-hat reaches x "
         "directly, through the mean and through the variance. Keep all three paths. Check: "
         "every column of dx sums to zero."),
    Trap("eval-in-train", "In training the running statistics are used to normalise (or the "
         "training flag is ignored). Training normalises with this batch's own mean and "
         "variance and updates the running averages; only evaluation normalises with the "
         "running ones."),
    Trap("train-in-eval", "At evaluation the batch's own statistics are used. Evaluation "
         "normalises with the running averages, so that an example's output does not depend on "
         "which other examples share its batch (and a single example is not turned into beta); "
         "the running averages come back unchanged."),
    Trap("running-var-biased", "The running variance is updated with the batch's biased "
         "variance (divided by N). The running average estimates the variance to use at "
         "evaluation, so it takes the unbiased one, divided by N - 1, as PyTorch does; only "
         "the normalisation of the batch itself uses the biased one."),
    Trap("unbiased-in-normalisation", "The batch is normalised with its unbiased variance "
         "(divided by N - 1). The normaliser describes this batch, so it divides by N, as "
         "PyTorch's batch_norm does; the unbiased variance only feeds the running average."),
    Trap("momentum-flipped", "The momentum weights the old running value: momentum * old + "
         "(1 - momentum) * batch is Keras's convention. In PyTorch's, the contract's, momentum "
         "is the weight of the new batch: (1 - momentum) * old + momentum * batch."),
    Trap("batch-of-one", "A training batch of one example is not refused. Its variance is 0 "
         "and x minus its mean is 0, so every output is beta, dx is 0, and the unbiased "
         "variance divides by N - 1 = 0. Raise a ValueError for N = 1 in training, as PyTorch "
         "does (evaluation still takes a single example)."),
    Trap("wrong-axis", "A reduction runs over the features of each example (axis 1, "
         "LayerNorm's axis) instead of over the batch (axis 0). BatchNorm keeps one mean and "
         "one variance per feature, computed over the N examples, and the backward's two means "
         "and the parameter sums run over the batch as well."),
]


def _layernorm_axis(ctx, x, gamma, beta, running_mean, running_var, momentum, eps):
    """What statistics over each example's features give: (y, mean, rstd, rm, rv), or None
    when a row of one feature cannot be normalised (D = 1)."""
    n, d = x.shape
    if d < 2:
        return None
    _, mean, rstd, _, _ = ctx.ref.batchnorm_forward(x.T, np.ones(n), np.zeros(n), np.zeros(n),
                                                    np.ones(n), True, momentum, eps)  # N each
    y = (x - mean[:, None]) * rstd[:, None] * gamma + beta                            # N, D
    var_u = (1.0 / rstd ** 2 - eps) * d / (d - 1)                                     # N
    forms = [y, mean, rstd, None, None]
    if n == d:  # the running averages only have the right shape when N = D
        forms[3] = (1 - momentum) * running_mean + momentum * mean
        forms[4] = (1 - momentum) * running_var + momentum * var_u
    return forms


def forward_forms(ctx, x, gamma, beta, running_mean, running_var, training, momentum, eps):
    """[{trap: [forms]} for each of the forward's five outputs], on one input."""
    n, _ = x.shape
    wrong = [dict() for _ in OUTPUTS]

    def add(trap, values):
        for i, value in enumerate(values):
            if value is not None:
                wrong[i].setdefault(trap, []).append(value)

    other = ctx.ref.batchnorm_forward(x, gamma, beta, running_mean, running_var, not training,
                                      momentum, eps) if n > 1 or training else None
    if not training:
        if other is not None:  # the batch's statistics at evaluation (N > 1)
            add("train-in-eval", other)
        else:                  # one example normalised with itself: beta, whatever x is
            add("train-in-eval", [np.broadcast_to(beta, x.shape), x[0], None, None, None])
        return wrong
    y, mean, rstd, new_mean, new_var = ctx.ref.batchnorm_forward(
        x, gamma, beta, running_mean, running_var, True, momentum, eps)
    add("eval-in-train", other)
    add("eval-in-train", [None, None, None, running_mean, running_var])  # nothing updated
    var_b = 1.0 / rstd ** 2 - eps                                           # D; biased
    var_u = var_b * n / (n - 1)                                             # D; unbiased
    rstd_u = 1.0 / np.sqrt(var_u + eps)
    add("unbiased-in-normalisation", [(x - mean) * rstd_u * gamma + beta, None, rstd_u, None, None])
    add("running-var-biased", [None, None, None, None, (1 - momentum) * running_var + momentum * var_b])
    add("momentum-flipped", [None, None, None, momentum * running_mean + (1 - momentum) * mean,
                             momentum * running_var + (1 - momentum) * var_u])
    add("momentum-flipped", [None, None, None, None, momentum * running_var + (1 - momentum) * var_b])
    layernorm = _layernorm_axis(ctx, x, gamma, beta, running_mean, running_var, momentum, eps)
    if layernorm is not None:
        add("wrong-axis", layernorm)
    return wrong


def backward_forms(ctx, dy, x, gamma, mean, rstd) -> dict:
    """{"dx" | "dgamma" | "dbeta": {trap: [forms]}} on one input of the training backward."""
    n, d = x.shape
    dx, _, _ = ctx.ref.batchnorm_backward(dy, x, gamma, mean, rstd)
    xhat = (x - mean) * rstd                                        # N, D
    g = dy * gamma                                                  # N, D
    mean_term = rstd * g.mean(axis=0)                               # what the mean's path takes off
    var_term = rstd * xhat * (g * xhat).mean(axis=0)                # ... the variance's path
    dx_forms = {"stats-as-constants": [rstd * g, dx + mean_term, dx + var_term],
                "wrong-axis": [rstd * (g - g.mean(axis=1, keepdims=True)
                                      - xhat * (g * xhat).mean(axis=1, keepdims=True))],
                "unbiased-in-normalisation": [dx + var_term * (1.0 - n / (n - 1))]}
    p = dy * xhat
    return {"dx": dx_forms,
            "dgamma": {"wrong-axis": [p.sum(axis=1), p.mean(axis=1)]},
            "dbeta": {"wrong-axis": [dy.sum(axis=1), dy.mean(axis=1)]}}


def column_sums_broken(dx, x) -> bool:
    """Whether a finite (N, D) ``dx`` has a column that does not sum to zero (relative to its size)."""
    if not (isinstance(dx, np.ndarray) and dx.shape == x.shape and dx.dtype.kind in "fiu"
            and np.all(np.isfinite(dx))):
        return False
    sums = np.abs(dx.sum(axis=0))
    return bool(np.any(sums > 1e-7 * (1.0 + np.abs(dx).sum(axis=0))))


