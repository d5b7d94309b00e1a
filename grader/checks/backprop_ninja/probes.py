"""backprop_ninja's inputs and the calls that grade them.

Shape letters: B examples, T tokens each, V vocabulary, C channels, H hidden units. Every
input is drawn for the check at hand: token ids that repeat within a row and across rows
(the embedding's scatter must add), ids that are all distinct (the same scatter cannot go
wrong there, which tells the two dE mistakes apart), a dropout mask with kept and dropped
units and B * H not a multiple of 8 (the last byte of the bits is padding), and gammas large
enough that |hln| > 1 (where 1 - hln^2 and 1 - h^2 differ most).
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Fail

FWD, BWD = "ninja_forward", "ninja_backward"
PARAMS = ("E", "W1", "b1", "gamma", "beta", "W2", "b2")
CACHE = ("emb", "x", "hpre", "mean", "rstd", "xhat", "hln", "h", "hdrop", "z", "logits")
CHAIN = ("dlogits", "dz", "dW2", "db2", "dhdrop", "dh", "dhln", "dgamma", "dbeta", "dhpre",
         "dW1", "db1", "dx", "demb", "dE")
"""The gradients in the order the backward pass produces them."""
EPS = 1e-5


class Problem:
    """One model and one batch: the arguments of both functions, and the reference's answers."""

    def __init__(self, ref, params, idx, targets, keep, p_drop, eps=EPS):
        self.params, self.idx, self.targets, self.p_drop, self.eps = params, idx, targets, p_drop, eps
        self.keep = keep  # B, H bool
        self.keep_bits = np.packbits(keep.ravel())
        self.ref = ref
        self.loss, self.cache = ref.ninja_forward(params, idx, targets, self.keep_bits, p_drop, eps)
        self.grads = ref.ninja_backward(params, self.cache, idx, targets, self.keep_bits, p_drop)

    @property
    def sizes(self) -> str:
        (b, t), (v, c), h = self.idx.shape, self.params["E"].shape, self.params["W1"].shape[1]
        return f"B={b}, T={t}, V={v}, C={c}, H={h}, p_drop={self.p_drop:g}"

    def forward_args(self):
        return self.params, self.idx, self.targets, self.keep_bits, self.p_drop, self.eps

    def backward_args(self):
        return self.params, self.cache, self.idx, self.targets, self.keep_bits, self.p_drop

    def loss_of(self, name):
        """``f(value)``: the reference loss with parameter ``name`` replaced, as a 0-d array."""
        def f(value):
            params = dict(self.params, **{name: value})
            return np.asarray(self.ref.ninja_forward(params, self.idx, self.targets, self.keep_bits,
                                                     self.p_drop, self.eps)[0])
        return f


def model(rng, T, V, C, H):
    """Parameters whose LayerNorm output often leaves [-1, 1] (|gamma| between 0.8 and 2)."""
    return {"E": rng.normal(size=(V, C)), "W1": rng.normal(size=(T * C, H)) / np.sqrt(T * C),
            "b1": rng.normal(0, 0.5, size=H),
            "gamma": rng.choice([-1.0, 1.0], size=H) * rng.uniform(0.8, 2.0, size=H),
            "beta": rng.normal(0, 0.5, size=H), "W2": rng.normal(size=(H, C)) / np.sqrt(H),
            "b2": rng.normal(0, 0.5, size=C)}


def repeated_ids(rng, B, T, V):
    """ids from a few tokens only, with a repeat inside row 0 and one across rows 0 and 1."""
    idx = rng.integers(0, max(1, min(V, 3 + B * T // 3)), size=(B, T))
    if T > 1:
        idx[0, 1] = idx[0, 0]
    if B > 1:
        idx[1, 0] = idx[0, 0]
    return idx


def distinct_ids(rng, B, T, V):
    """B * T different ids (needs V >= B * T)."""
    return rng.permutation(V)[:B * T].reshape(B, T)


def dropout_mask(rng, B, H, p_drop):
    """keep (B, H) with at least one kept and, when p_drop > 0, one dropped unit."""
    if p_drop == 0:
        return np.ones((B, H), dtype=bool)
    keep = rng.random((B, H)) >= p_drop
    keep.flat[0], keep.flat[-1] = True, False
    return keep


def problem(ctx, B, T, V, C, H, p_drop=0.3, ids="repeated"):
    rng = ctx.rng
    if ids == "same":  # one id at every position
        idx = np.full((B, T), rng.integers(V))
    else:
        idx = (distinct_ids if ids == "distinct" else repeated_ids)(rng, B, T, V)
    targets = rng.integers(0, V, size=B)
    return Problem(ctx.ref, model(rng, T, V, C, H), idx, targets, dropout_mask(rng, B, H, p_drop), p_drop)


def learner_grads(ctx, prob: Problem) -> dict:
    """The learner's gradients for ``prob``: a dict holding every key of CHAIN."""
    got = ctx.call(BWD, *prob.backward_args())
    if not isinstance(got, dict):
        raise Fail(f"{BWD} must return a dict of gradients (keys {', '.join(CHAIN)}), "
                   f"but returned {type(got).__name__}")
    missing = [k for k in CHAIN if k not in got]
    if missing:
        raise Fail(f"the dict from {BWD} has no {', '.join(missing)} (input {prob.sizes})")
    return got


def learner_forward(ctx, prob: Problem):
    """The learner's (loss, cache) for ``prob``; the cache a dict holding every key of CACHE."""
    got = ctx.unpack(ctx.call(FWD, *prob.forward_args()), 2, FWD, "loss, cache")
    loss, cache = got
    if not isinstance(cache, dict):
        raise Fail(f"the cache from {FWD} must be a dict (keys {', '.join(CACHE)}), "
                   f"but it is a {type(cache).__name__}")
    missing = [k for k in CACHE if k not in cache]
    if missing:
        raise Fail(f"the cache from {FWD} has no {', '.join(missing)} (input {prob.sizes})")
    return loss, cache


def is_right(got, expected) -> bool:
    got = np.asarray(got) if isinstance(got, (np.ndarray, float, int)) else None
    return (got is not None and got.shape == np.shape(expected) and got.dtype.kind in "fiu"
            and bool(np.all(np.isfinite(got))) and bool(np.allclose(got, expected, rtol=1e-6, atol=1e-8)))


def first_wrong(got: dict, prob: Problem) -> str | None:
    """The first gradient along the backward pass that differs from the reference's."""
    for name in CHAIN:
        if not is_right(got.get(name), prob.grads[name]):
            return name
    return None
