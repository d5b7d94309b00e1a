"""Inputs and the reading of answers for the vram_trap checks: nets of order-1 values whose
pre-activations keep away from the ReLU's kink, nets of exact halves whose pre-activations are
exactly 0 in places, and the memory budget."""
from __future__ import annotations

import math

import numpy as np

from backprop_traps.grader.engine.question import Fail

MLP, RELU_F, RELU_B = "mlp_loss_and_grads", "relu_forward_packed", "relu_backward_packed"
MEM_L, MEM_D, MEM_N, MEM_S, SLACK = 36, 32, 2048, 6, 4


def mlp(rng, widths, n):
    """params for ``widths`` (He-scaled so activations stay O(1) at any depth), x and y."""
    params = [(rng.standard_normal((a, b)) * math.sqrt(2.0 / a), rng.standard_normal(b) * 0.1)
              for a, b in zip(widths[:-1], widths[1:])]
    return params, rng.standard_normal((n, widths[0])), rng.standard_normal((n, widths[-1]))


def away_from_zero(rng, shape) -> np.ndarray:
    """Values with |z| >= 0.05, so finite differences never straddle the ReLU's kink."""
    return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.05, 2.0, size=shape)


def flat(grads) -> np.ndarray:
    return np.concatenate([np.ravel(g) for pair in grads for g in pair])


def memory_budget(L, D, N, s) -> int:
    """Bytes allowed for one call: ceil(L/s) + s + SLACK activations (N, D), params, grads."""
    activation, weights = N * D * 8, L * (D * D + D) * 8
    return (math.ceil(L / s) + s + SLACK) * activation + 2 * weights


def learner_grads(ctx, value, params, where: str):
    """Unpack ``(loss, grads)`` and check that grads is a list of (dW_i, db_i) shaped like params."""
    loss, grads = ctx.unpack(value, 2, MLP, "loss, grads")
    if not isinstance(grads, (list, tuple)) or len(grads) != len(params):
        size = f"{len(grads)} items" if isinstance(grads, (list, tuple)) else f"a {type(grads).__name__}"
        raise Fail(f"{where}`grads` must be a list of {len(params)} pairs (dW_i, db_i), one per "
                   f"layer, but it is {size}.")
    checked = []
    for i, (pair, (W, b)) in enumerate(zip(grads, params)):
        dW, db = ctx.unpack(pair, 2, MLP, f"grads[{i}] = (dW_{i}, db_{i})")
        checked.append((ctx.as_array(f"dW_{i}", dW, W, MLP), ctx.as_array(f"db_{i}", db, b, MLP)))
    return loss, checked


def missing_layers(grads, expected) -> list[int]:
    """Layers whose gradients are all zeros where the right ones are not: never reached."""
    return [i for i, (pair, want) in enumerate(zip(grads, expected))
            if not any(np.any(g) for g in pair) and any(np.any(w) for w in want)]
