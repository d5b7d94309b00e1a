"""Inputs for the residual_backward checks, where a wrong gradient first shows going down the
stack, and the smallest failing example for the feedback.

Shapes: x, dout (N, D); hs, dhs (L + 1, N, D); weights a list of L pairs (W1 (D, H), W2 (H, D)).
W1 is drawn at He's scale and W2 at sqrt(1 / H) / sqrt(L): every block's branch is a fraction of
the identity, so a stack's states and gradients stay of order 1 with the skip and without it,
and each ReLU sees pre-activations of order 1 (rarely near its kink). The deep check takes a
branch of 0.7: through 20 blocks the gradient grows a few times with the skip and shrinks by
three orders of magnitude without it, every layer's norm still far above rounding.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.checks.residual_backward.traps import BWD, FWD, NORMS
from backprop_traps.grader.engine.gradcheck import upstream

MARGIN = 1e-3  # |z| at least this where finite differences (steps of 1e-6) are taken


def stack(rng, L, D, H, branch=None):
    """``weights``: L pairs (W1 (D, H), W2 (H, D))."""
    branch = 1.0 / np.sqrt(max(L, 1)) if branch is None else branch
    return [(rng.standard_normal((D, H)) * np.sqrt(2.0 / D),
             rng.standard_normal((H, D)) * np.sqrt(1.0 / H) * branch) for _ in range(L)]


def away_from_kinks(rng, ref, L, N, D, H, skip, tries=50):
    """(x, weights) whose every pre-activation h_l @ W1_l is at least MARGIN from 0."""
    for _ in range(tries):
        x, weights = rng.standard_normal((N, D)), stack(rng, L, D, H)
        hs = ref.residual_forward(x, weights, skip)
        if all(np.min(np.abs(hs[i] @ W1)) > MARGIN for i, (W1, _) in enumerate(weights)):
            break
    return x, weights


def on_the_kink(rng, L, N, D, H):
    """(x, weights) of small integers and halves, in which many pre-activations h_l @ W1_l are
    exactly 0 (exact arithmetic): the ReLU's derivative there is 0 (the mask is z > 0)."""
    x = rng.integers(-2, 3, size=(N, D)).astype(np.float64)
    weights = [(rng.integers(-1, 2, size=(D, H)).astype(np.float64),
                rng.integers(-1, 2, size=(H, D)) * 0.5) for _ in range(L)]
    return x, weights


def first_wrong_layer(got, expected) -> int | None:
    """The highest layer l whose slice got[l] differs from expected[l] (the backward walks down,
    so everything below it may only inherit the error); None when none differs."""
    for layer in reversed(range(len(expected))):
        if not np.allclose(np.asarray(got[layer], dtype=np.float64), expected[layer], rtol=1e-6, atol=1e-8):
            return layer
    return None


def layers_sentence(name, got, expected, top, up=False) -> str:
    """Where a per-layer answer differs: going down from layer ``top`` (a backward), or going up
    from layer 0 (``up``, a forward)."""
    wrong = [layer for layer in range(len(expected))
             if not np.allclose(np.asarray(got[layer], dtype=np.float64), expected[layer], rtol=1e-6, atol=1e-8)]
    if not wrong:
        return ""
    if up:
        first = min(wrong)
        right = ("even layer 0 is wrong" if first == 0 else "layer 0 is right" if first == 1
                 else f"layers 0 to {first - 1} are right")
        return (f"`{name}` differs at {len(wrong)} of {len(expected)} layers, first at layer {first} going "
                f"up the stack ({right}).")
    first = max(wrong)
    right = ("even the top layer is wrong" if first == top else f"layer {top} is right" if first + 1 == top
             else f"layers {first + 1} to {top} are right")
    return (f"`{name}` differs at {len(wrong)} of {len(expected)} layers, first at layer {first} going "
            f"down the stack ({right}).")


SMALL = [(1, 1, 2, 2), (2, 1, 2, 2), (2, 2, 2, 3)]  # L, N, D, H of the smallest failing stacks


def _small_stack(rng, size):
    L, N, D, H = size
    x = np.round(rng.standard_normal((N, D)), 1)
    weights = [(np.round(W1, 1), np.round(W2, 1)) for W1, W2 in stack(rng, L, D, H, branch=1.0)]
    return x, weights, np.round(upstream(rng, x.shape), 1)


def backward_example(ctx, skip):
    """A callable giving the smallest stack on which the learner's dhs is still wrong."""
    def build(rng, size):
        x, weights, dout = _small_stack(rng, size)
        return {"dout": dout, "hs": ctx.ref.residual_forward(x, weights, skip), "weights": weights, "skip": skip}
    return lambda: ctx.smallest_failure(BWD, build, SMALL, lambda *a: ctx.ref.residual_backward(*a)[0],
                                        pick=lambda v: v[0], name="dhs")


def forward_example(ctx, skip):
    """A callable giving the smallest stack on which the learner's forward is still wrong."""
    def build(rng, size):
        x, weights, _ = _small_stack(rng, size)
        return {"x": x, "weights": weights, "skip": skip}
    return lambda: ctx.smallest_failure(FWD, build, SMALL, ctx.ref.residual_forward, name="hs")


def norms_example(ctx, index, name):
    """A callable giving the smallest stack on which the learner's norms ``index`` are still wrong."""
    def build(rng, size):
        x, weights, dout = _small_stack(rng, size)
        return {"dout": dout, "x": x, "weights": weights}
    return lambda: ctx.smallest_failure(NORMS, build, SMALL, lambda *a: ctx.ref.gradient_norms(*a)[index],
                                        pick=lambda v: v[index], name=name)
