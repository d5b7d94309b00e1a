"""gradient_clinic's traps: what each mistake is, and the wrong answer it gives on an input.

Wrong forms are built from the input (and, for diagnose, from the reference's own diagnosis),
never by writing the right tools a second time.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

TRAPS = [
    Trap("absolute-error", "The gradient check's error is not relative: a difference of 1e-3 "
         "is a broken gradient when its entries are about 1e-2 and rounding noise when they are "
         "about 1e5. Divide the norm of the difference by the larger of the two gradients' norms, "
         "so the number means the same at every scale."),
    Trap("elementwise-ratio", "The error is divided entry by entry. Wherever one gradient has "
         "an exact 0 and the other has 1e-12 (dead units, padding, finite-difference noise), that "
         "entry's ratio is 1 or NaN, and a right gradient looks broken. Take norms over the whole "
         "tensor first, then divide: each entry then counts by its size."),
    Trap("ratio-of-gradient", "The ratio divides the gradient's norm by the weight's, not the "
         "update's. The step an optimizer takes is the learning rate (and, for Adam, its "
         "normalisation) times the gradient: read it off the weights, after minus before. A "
         "gradient-to-weight ratio cannot see a learning rate 100 times too large."),
    Trap("dead-per-entry", "The fraction counts entries at or below 0, over every example and "
         "unit. A ReLU unit is dead when it is at or below 0 for every example in the batch: it "
         "then passes no gradient at all. Count units (columns), not entries."),
    Trap("bn-downstream", "Every layer after the BatchNorm left in training mode is named too. "
         "Once one layer's output depends on the rest of the batch, every later layer inherits "
         "it: the fault is only in the first layer where the whole batch and its two halves "
         "disagree."),
    Trap("frozen-vs-detached", "A detached layer and a frozen one are mixed up. Both end the "
         "step where they started, so the update alone cannot tell them apart: read the gradient "
         "first. No gradient from backprop (while the finite-difference one is not zero) is a "
         "detached branch; a gradient with no step is a frozen weight."),
]


def update_ratio_forms(before, after, grads) -> dict:
    """ratio-of-gradient: the gradient's norm over the weight's."""
    with np.errstate(divide="ignore", invalid="ignore"):
        wrong = np.array([np.linalg.norm(g) / np.linalg.norm(w) for g, w in zip(grads, before)])
    return {"ratio-of-gradient": [wrong]}


def dead_forms(pre_acts) -> dict:
    """dead-per-entry: the share of entries at or below 0 (or below 0)."""
    return {"dead-per-entry": [np.array([float(np.mean(z <= 0)) for z in pre_acts]),
                               np.array([float(np.mean(z < 0)) for z in pre_acts])]}


def absolute_forms(a, n) -> list:
    return [float(np.linalg.norm(a - n)), float(np.max(np.abs(a - n)))]


def diagnosis_forms(expected: set, layers: int) -> dict:
    """bn-downstream and frozen-vs-detached, from the reference's diagnosis."""
    forms = {"bn-downstream": [], "frozen-vs-detached": []}
    for fault, layer in expected:
        if fault == "bn-train-at-eval":
            forms["bn-downstream"].append(expected | {(fault, j) for j in range(layer, layers)})
        if fault in ("detached", "frozen"):
            other = "frozen" if fault == "detached" else "detached"
            forms["frozen-vs-detached"] += [expected - {(fault, layer)} | {(other, layer)},
                                            expected | {(other, layer)}]
    return forms
