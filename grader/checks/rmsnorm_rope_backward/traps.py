"""rmsnorm_rope_backward's traps: each known-wrong answer on a check's own inputs, read off the
reference's answers where it can be (RoPE by -theta is the reference at -pos; GPT-J's adjacent
pairs are the reference on permuted features)."""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

TRAPS = [
    Trap("mean-term-kept", "LayerNorm's mean is carried into RMSNorm. RMSNorm subtracts no mean: "
         "rstd is one over the square root of the mean of x squared plus eps, and y is x times "
         "rstd times gamma. With nothing subtracted in the forward, the backward has no term "
         "through a mean: dx is rstd times (g minus x-hat times the row mean of g times x-hat), "
         "with g = dy times gamma. Its rows do not sum to zero."),
    Trap("rms-as-constant", "The root mean square is treated as a constant in the backward. rstd "
         "is computed from every x of the row, so moving one x_i moves it, and through it every "
         "output of the row: dx needs the path through the rms, minus rstd times x-hat times the "
         "row mean of g times x-hat, as well as the direct term rstd times g. Check: with eps = 0 "
         "each row of dx is orthogonal to its row of x."),
    Trap("rotated-forward", "The backward rotates the gradient forward, by +theta, as the "
         "forward does. The forward multiplies each pair by a rotation R(theta); the backward "
         "multiplies by its transpose, and a rotation's transpose is its inverse, R(-theta): "
         "rotate dy back by the same angle (the forward at positions -pos)."),
    Trap("rotate-half-sign", "The rotated half has the wrong sign: rotate_half must be "
         "concat(-x2, x1), so that the first half becomes x1 cos - x2 sin and the second x2 cos + "
         "x1 sin. With the minus on the other half every pair turns by -theta."),
    Trap("interleaved-pairs", "The pairs are adjacent features (2i, 2i + 1), the layout of GPT-J "
         "and the RoFormer paper. This contract is GPT-NeoX's and Llama's: feature i is paired "
         "with feature i + D/2, the pair's angle pos times base to the power -2i/D."),
]
EXPLANATION = {t.id: t.explanation for t in TRAPS}


def rmsnorm_forward_forms(x, gamma, eps) -> dict:
    """{trap: [(y, rstd), ...]}: LayerNorm's centring in the forward, whole or in part."""
    mean = x.mean(axis=1, keepdims=True)                     # N, 1
    xc = x - mean                                            # N, D
    r_var = 1.0 / np.sqrt((xc * xc).mean(axis=1) + eps)      # N; around the mean
    r_rms = 1.0 / np.sqrt((x * x).mean(axis=1) + eps)        # N; around 0 (right)
    return {"mean-term-kept": [(xc * r_var[:, None] * gamma, r_var),   # LayerNorm without beta
                               (x * r_var[:, None] * gamma, r_var),    # the variance, not the rms
                               (xc * r_rms[:, None] * gamma, r_rms)]}  # the mean subtracted after


def rmsnorm_backward_forms(ref, dy, x, gamma, rstd) -> dict:
    """{"dx" | "dgamma": {trap: [wrong values]}} on one input."""
    dx, _ = ref.rmsnorm_backward(dy, x, gamma, rstd)
    r = rstd[:, None]                                        # N, 1
    g = dy * gamma                                           # N, D
    xc_hat = (x - x.mean(axis=1, keepdims=True)) * r         # N, D: LayerNorm's x-hat
    mean_term = r * g.mean(axis=1, keepdims=True)            # LayerNorm's path through the mean
    return {"dx": {"mean-term-kept": [dx - mean_term,
                                      r * (g - g.mean(axis=1, keepdims=True)
                                           - xc_hat * (g * xc_hat).mean(axis=1, keepdims=True))],
                   "rms-as-constant": [r * g]},
            "dgamma": {"mean-term-kept": [(dy * xc_hat).sum(axis=0)]}}


def _halves(x):
    """Adjacent pairs (2i, 2i + 1) moved to (i, i + D/2), and back."""
    return np.concatenate([x[:, 0::2], x[:, 1::2]], axis=1)


def _adjacent(y):
    out = np.empty_like(y)
    half = y.shape[1] // 2
    out[:, 0::2], out[:, 1::2] = y[:, :half], y[:, half:]
    return out


def rope_forward_forms(ref, x, pos, base) -> dict:
    """{trap: [y, ...]}: the turn by -theta, GPT-J's adjacent pairs."""
    return {"rotate-half-sign": [ref.rope_forward(x, -pos, base)],
            "interleaved-pairs": [_adjacent(ref.rope_forward(_halves(x), pos, base))]}


def rope_backward_forms(ref, dy, pos, base) -> dict:
    """{trap: [dx, ...]}: dy turned by +theta, or back over adjacent pairs (either way)."""
    return {"rotated-forward": [ref.rope_forward(dy, pos, base)],
            "interleaved-pairs": [_adjacent(ref.rope_forward(_halves(dy), -pos, base)),
                                  _adjacent(ref.rope_forward(_halves(dy), pos, base))]}
