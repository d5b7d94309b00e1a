"""Inputs for the weight_tying checks, and the calls that read the learner's answers.

Shape letters: V tokens, D features, N positions. E is drawn at unit scale and W at
0.8 / sqrt(D), so tanh bends (|x @ W| of order 1) and the logits spread the softmax without
saturating it. The vocabulary and the width differ (V != D) wherever the transposed layout of
the projection's gradient must not fit E's shape, and are equal (V = D) where it must fit, so
that only its values can tell it apart. Ids repeat where the lookup's share must add up, and
are distinct where one share is told from the other.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.weight_tying.traps import BWD, FWD
from backprop_traps.grader.engine.question import Fail

CACHE = ("x", "h", "p")


class Problem:
    """One model and one batch: the arguments, and the reference's answers."""

    def __init__(self, ref, E, W, ids, targets):
        self.ref, self.E, self.W, self.ids, self.targets = ref, E, W, ids, targets
        self.loss, self.cache = ref.tied_lm_forward(E, W, ids, targets)
        self.dE, self.dW = ref.tied_lm_backward(E, W, self.cache, ids, targets)

    @property
    def sizes(self) -> str:
        (V, D), N = self.E.shape, len(self.ids)
        return f"V={V}, D={D}, N={N}"

    def loss_of_E(self, E):
        return np.asarray(self.ref.tied_lm_forward(E, self.W, self.ids, self.targets)[0])

    def loss_of_W(self, W):
        return np.asarray(self.ref.tied_lm_forward(self.E, W, self.ids, self.targets)[0])


def repeated_ids(rng, V, N):
    """N ids from a few tokens, id 0's token at positions 0 and 1 at least."""
    ids = rng.integers(0, max(2, min(V, 2 + N // 2)), size=N)
    ids[1] = ids[0]
    return ids


def problem(ctx, V, D, N, ids="repeated"):
    rng = ctx.rng
    E = rng.standard_normal((V, D))
    W = rng.standard_normal((D, D)) * 0.8 / np.sqrt(D)
    chosen = rng.permutation(V)[:N] if ids == "distinct" else repeated_ids(rng, V, N)
    targets = rng.integers(0, V, size=N)
    return Problem(ctx.ref, E, W, chosen.astype(np.int64), targets.astype(np.int64))


def learner_forward(ctx, prob: Problem):
    """The learner's (loss, cache) for ``prob``; the cache a dict holding every key of CACHE."""
    loss, cache = ctx.unpack(ctx.call(FWD, prob.E, prob.W, prob.ids, prob.targets), 2, FWD, "loss, cache")
    if not isinstance(cache, dict):
        raise Fail(f"the cache from {FWD} must be a dict (keys x, h, p), but it is a {type(cache).__name__}")
    missing = [k for k in CACHE if k not in cache]
    if missing:
        raise Fail(f"the cache from {FWD} has no {', '.join(missing)} (input {prob.sizes})")
    return loss, cache


def learner_backward(ctx, prob: Problem):
    """The learner's (dE, dW) for ``prob``, called with the reference's own cache."""
    return ctx.unpack(ctx.call(BWD, prob.E, prob.W, prob.cache, prob.ids, prob.targets), 2, BWD, "dE, dW")


def at(prob: Problem, failure: Fail, extra: str = "") -> Fail:
    """``failure`` with the input's sizes on its first line."""
    head, _, rest = failure.feedback.partition("\n")
    return Fail(f"{head.rstrip('.')} (input {prob.sizes}).{extra}" + (f"\n{rest}" if rest else ""),
                failure.trap, settled=failure.settled)
