"""The wrong variants of adamw_step, each computed on a check's own inputs.

Every form is the reference (``ctx.ref``, the solution notebook) called on changed inputs
where it can be: Adam's L2 is the reference with ``g + weight_decay * p`` and no decay, a
decayed exempt tensor is the reference with ``decay=True``. Shapes: p, g, m, v of one shape.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

STEP, MIXED = "adamw_step", "mixed_precision_step"
FLOPS, BYTES = "training_flops", "bytes_per_param"

TRAPS = [
    Trap("no-bias-correction", "The moments are used without their bias correction. m and v "
         "start at zero, so after t steps they are too small by the factors 1 - beta1^t and "
         "1 - beta2^t; divide them by those factors before the step, or the first steps are "
         "the wrong size."),
    Trap("l2-not-decoupled", "The weight decay goes through the gradient (Adam with an L2 "
         "term), so it reaches the moments and is divided by the root of v. AdamW decouples "
         "it: the moments see the plain gradient, and p itself shrinks by lr times "
         "weight_decay."),
    Trap("decay-on-bias-and-norm", "A tensor whose decay flag is False was decayed anyway. "
         "Parameter groups exempt biases and normalisation weights from weight decay: for "
         "them the step is the Adam update alone."),
    Trap("eps-inside-sqrt", "eps is added inside the square root, sqrt(v_hat + eps). "
         "PyTorch's Adam and AdamW add it to the root, sqrt(v_hat) + eps; the two differ "
         "where v_hat is tiny, by a factor of ten or more for gradients near 1e-5."),
    Trap("update-in-low-precision", "The update reaches the weights in float16, where a step "
         "below half the spacing of the numbers (about 5e-4 near 1) rounds away. The step runs "
         "on the float32 master copy, which keeps every small step; the float16 weights are "
         "only its copy, cast after the step."),
    Trap("skip-not-clean", "A skipped step changed something. When a gradient holds an inf or "
         "a NaN the whole step is skipped: the master weights, both moments and the step "
         "count stay as they were (the bias correction reads the count)."),
]


def step_forms(ctx, p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay) -> list:
    """[{trap: [form]} for p, m, v] of adamw_step on one input."""
    wrong = [dict(), dict(), dict()]

    def add(trap, values):
        for i, value in enumerate(values):
            if value is not None:
                wrong[i].setdefault(trap, []).append(value)

    _, m_new, v_new = ctx.ref.adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay, decay)
    shrunk = p * (1 - lr * weight_decay) if decay else p
    m_hat, v_hat = m_new / (1 - beta1 ** t), v_new / (1 - beta2 ** t)
    add("no-bias-correction", [shrunk - lr * m_new / (np.sqrt(v_new) + eps), None, None])
    add("no-bias-correction", [shrunk - lr * m_hat / (np.sqrt(v_new) + eps), None, None])
    add("no-bias-correction", [shrunk - lr * m_new / (np.sqrt(v_hat) + eps), None, None])
    add("eps-inside-sqrt", [shrunk - lr * m_hat / np.sqrt(v_hat + eps), None, None])
    if decay and weight_decay:
        add("l2-not-decoupled", ctx.ref.adamw_step(p, g + weight_decay * p, m, v, t, lr, beta1,
                                                   beta2, eps, 0.0, False))
    if not decay and weight_decay:
        add("decay-on-bias-and-norm", [ctx.ref.adamw_step(p, g, m, v, t, lr, beta1, beta2, eps,
                                                          weight_decay, True)[0], None, None])
    return wrong


def in_float16(values) -> bool:
    """Whether every entry of a float array is a float16 number (rounded through float16)."""
    values = np.asarray(values)
    with np.errstate(over="ignore"):
        return bool(np.all(values.astype(np.float16).astype(values.dtype) == values))
