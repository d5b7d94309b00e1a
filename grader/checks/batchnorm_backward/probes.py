"""Inputs for the batchnorm_backward checks, the batch-of-one probe, and the smallest failing
examples shown in feedback.

Shapes: x, dy (N, D); gamma, beta, running_mean, running_var, mean, rstd (D,). Every feature
gets its own offset and spread, so per-feature statistics differ from per-example ones and
from the running averages; the momentum is never 0.5, where its two conventions agree.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.gradcheck import upstream
from backprop_traps.grader.engine.question import Fail
from backprop_traps.grader.checks.batchnorm_backward.traps import BWD, FWD, GRADS, OUTPUTS

MOMENTUM = 0.1  # PyTorch's default
EPS = 1e-5      # PyTorch's default


def batch(rng, n, d):
    """x (N, D): every feature its own offset in [-3, 3] and spread in [0.5, 2]."""
    offset = rng.uniform(-3.0, 3.0, size=(1, d))
    spread = rng.uniform(0.5, 2.0, size=(1, d))
    return offset + spread * rng.standard_normal((n, d))


def params(rng, d):
    """(gamma, beta), each (D,); |gamma| in [0.5, 1.5], both signs."""
    gamma = rng.choice([-1.0, 1.0], size=d) * rng.uniform(0.5, 1.5, size=d)
    return gamma, rng.standard_normal(d)


def running(rng, d):
    """(running_mean, running_var), each (D,): far from the batch's and from (0, 1)."""
    return rng.uniform(-2.0, 2.0, size=d), rng.uniform(0.3, 3.0, size=d)


def problem(rng, n, d):
    """(x, gamma, beta, running_mean, running_var) for one check."""
    return (batch(rng, n, d), *params(rng, d), *running(rng, d))


def refuses_batch_of_one(ctx, x, gamma, beta, running_mean, running_var):
    """Whether the learner's training forward refuses one example with a ValueError; a
    ``Fail`` naming batch-of-one when it answers or raises something else."""
    result = ctx.sandbox.call(FWD, x, gamma, beta, running_mean, running_var, True, MOMENTUM, EPS)
    if result.ok:
        raise Fail(f"{FWD} accepted a training batch of one example (N = 1, D = {x.shape[1]}) "
                   "and returned an answer.", "batch-of-one")
    if result.kind != "exception":  # not implemented, missing, a crash: its own sentence
        raise Fail(result.error)
    if "raised ValueError" not in result.error:
        raise Fail(f"On a training batch of one example, {result.error}: the contract asks for a "
                   "ValueError that says why, not an accident of the arithmetic.", "batch-of-one")


# -- the smallest failing example, for the feedback ----------------------------------------------
def _small(rng, size):
    n, d = size
    x = np.round(batch(rng, n, d), 2)
    gamma, beta = (np.round(a, 2) for a in params(rng, d))
    running_mean, running_var = (np.round(a, 2) for a in running(rng, d))
    return x, gamma, beta, running_mean, running_var


def forward_example(ctx, index, training, momentum, eps):
    """A callable giving the smallest input where the learner's forward output ``index`` is wrong."""
    def build(rng, size):
        x, gamma, beta, rm, rv = _small(rng, size)
        return {"x": x, "gamma": gamma, "beta": beta, "running_mean": rm, "running_var": rv,
                "training": training, "momentum": momentum, "eps": eps}
    sizes = [(2, 1), (2, 2), (3, 2)] if training else [(1, 2), (2, 2), (3, 2)]
    return lambda: ctx.smallest_failure(FWD, build, sizes,
                                        lambda *a: ctx.ref.batchnorm_forward(*a)[index],
                                        pick=lambda v: v[index], name=OUTPUTS[index])


def backward_example(ctx, index):
    """A callable giving the smallest input where the learner's gradient ``index`` is wrong."""
    def build(rng, size):
        x, gamma, beta, rm, rv = _small(rng, size)
        _, mean, rstd, _, _ = ctx.ref.batchnorm_forward(x, gamma, beta, rm, rv, True, MOMENTUM, 0.0)
        dy = np.round(upstream(rng, x.shape), 1)
        return {"dy": dy, "x": x, "gamma": gamma, "mean": mean, "rstd": rstd}
    return lambda: ctx.smallest_failure(BWD, build, [(2, 1), (3, 1), (3, 2)],
                                        lambda *a: ctx.ref.batchnorm_backward(*a)[index],
                                        pick=lambda v: v[index], name=GRADS[index])
