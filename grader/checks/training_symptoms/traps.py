"""training_symptoms' traps: the diagnoses a careless reading of a run gives, and the wrong
backwards of the block that starts as the identity.

A diagnosis trap is named when the learner's answer on one run is exactly that confusion (the
run's planted cause, the answer's cause): true of this answer on this run, never guessed.
The block's wrong forms are computed from the check's own inputs.
Shapes: h, dout, dh (N, D); W1 (D, H); W2 (H, D); gain, dgain (D,).
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

DIAGNOSE, FWD, BWD = "diagnose", "gated_block_forward", "gated_block_backward"
GRADS = ("dh", "dW1", "dW2", "dgain")

TRAPS = [
    Trap("nan-timing-ignored", "A run that turned NaN after hundreds of healthy steps is named "
         "like one that was NaN from the start, or the other way round. When the NaN first "
         "appears is the symptom: within the first steps it comes from the init or from the "
         "loss's own arithmetic; after a healthy start, from something that happened then, such "
         "as a batch past float16's range."),
    Trap("initial-loss-ignored", "What was logged at step 0 is not read: a NaN at the start is "
         "blamed on the wrong one of its two causes, or an init too large is recognised only "
         "once it turns NaN. An untrained classifier's loss is about ln C: a finite first loss "
         "far above it is an initial scale too large, NaN later or never (a loop that clips its "
         "gradients stays finite); a loss that is NaN while the gradients' norms are ordinary is "
         "the loss's own arithmetic, here a log of 0."),
    Trap("smooth-loss-trusted", "A training loss that falls without a single bump is taken for "
         "a healthy one. Minibatches make the loss noisy, up about as often as down from one step "
         "to the next; a loss that only goes down, towards 0, is the same batch seen again and "
         "again, memorised, while the validation loss goes nowhere."),
    Trap("val-gap-conflated", "Two runs whose validation loss does not follow the training loss "
         "are mixed up. Both show the gap; the training loss tells them apart: smooth and falling "
         "to 0 is one batch repeated, noisy and ordinary is a validation that runs differently "
         "from training (BatchNorm left in training mode)."),
    Trap("end-of-run-only", "The run is judged by how it ends, and it recovered. Read the loss "
         "where the depth changed: a jump right at the step a block was added says the block did "
         "not start as the identity."),
    Trap("gain-not-in-weight-grads", "The branch's gradients miss the gain. The block adds "
         "gain * F(h), so everything inside F sees the gradient from above times the gain: "
         "dW2 = a^T (dout * gain), and dz comes from (dout * gain) @ W2^T. At gain 0 the "
         "branch's weights get no gradient at first, and dh is dout."),
    Trap("zero-gain-no-gradient", "The gain's own gradient is zero where the gain is 0. A gain "
         "of 0 stops the branch's output, not its gradient: dgain is the sum over the batch of "
         "dout * F(h), which is not 0, so the gain moves at the first step and the branch starts "
         "to learn."),
]

CONFUSIONS = {  # (planted cause, the answer's cause) -> trap
    ("fp16-overflow", "init-scale"): "nan-timing-ignored", ("fp16-overflow", "log-zero"): "nan-timing-ignored",
    ("init-scale", "fp16-overflow"): "nan-timing-ignored", ("log-zero", "fp16-overflow"): "nan-timing-ignored",
    ("init-scale", "log-zero"): "initial-loss-ignored", ("log-zero", "init-scale"): "initial-loss-ignored",
    ("init-scale", "healthy"): "initial-loss-ignored",
    ("repeated-batch", "healthy"): "smooth-loss-trusted",
    ("repeated-batch", "bn-train-mode"): "val-gap-conflated", ("bn-train-mode", "repeated-batch"): "val-gap-conflated",
    ("block-not-identity", "healthy"): "end-of-run-only",
}


def confusion(planted: str, answered) -> str | None:
    return CONFUSIONS.get((planted, answered)) if isinstance(answered, str) else None


def backward_forms(dout, h, W1, W2, gain) -> dict:
    """{"dh" | "dW1" | "dW2" | "dgain": {trap: [form]}} on one input."""
    z = h @ W1                                           # N, H
    a = np.maximum(z, 0.0)
    f = a @ W2                                           # N, D
    dz_no_gain = (dout @ W2.T) * (z > 0)                 # the gain left out of the branch
    forms = {"dh": {"gain-not-in-weight-grads": [dout + dz_no_gain @ W1.T]},
             "dW1": {"gain-not-in-weight-grads": [h.T @ dz_no_gain]},
             "dW2": {"gain-not-in-weight-grads": [a.T @ dout]}}
    dgain = np.sum(dout * f, axis=0)                     # D
    forms["dgain"] = {"zero-gain-no-gradient": [gain * dgain] + ([np.zeros_like(dgain)] if not np.any(gain) else [])}
    return forms
