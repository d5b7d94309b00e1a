"""The wrong variants of residual_backward, each computed on a check's own inputs.

Shapes as in the contract: x, dout (N, D); hs and dhs (L + 1, N, D); weights a list of L
pairs (W1 (D, H), W2 (H, D)). Every backward variant here is one walk down the stack in which
the identity path adds ``identity`` times the gradient from above: 1 is the right residual
backward, 0 the identity missing, 2 the skip counted twice (and 0 is also the right backward
of the plain stack, which is why the forms are only offered where the skip is on).
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

FWD, BWD, NORMS, STD = "residual_forward", "residual_backward", "gradient_norms", "kaiming_std"

TRAPS = [
    Trap("identity-missing", "The identity path is missing from the backward: each layer gets "
         "only what comes back through F. The block is h_{l+1} = h_l + F(h_l), so the gradient "
         "from above reaches h_l twice: through F, and unchanged through the identity. Add it: "
         "dh_l = dh_{l+1} + (what F sends back)."),
    Trap("skip-counted-twice", "The skip's gradient is counted twice: each layer's gradient holds "
         "the one from above two times, plus what comes back through F. The identity is one "
         "path, so it passes the gradient on once; added in the block's backward and again where "
         "the block is called, it doubles at every layer, 2^L times at the input."),
    Trap("fan-swapped", "fan_in and fan_out are swapped. Here a layer computes h @ W with W of "
         "shape (D_in, D_out): fan_in is D_in, the rows, and fan_out is D_out, the columns "
         "(PyTorch's nn.Linear stores its weight the other way round, (out, in)). The fan_in "
         "scale keeps the forward's variance; the fan_out scale keeps the backward's."),
    Trap("xavier-with-relu", "This is a scale derived for an activation with slope 1 around 0, "
         "such as tanh or none: Xavier's (Glorot's) sqrt(2 / (fan_in + fan_out)), or LeCun's "
         "sqrt(1 / fan) with one fan. A ReLU zeroes half of what passes through it, "
         "forward and backward, so with Xavier's scale every ReLU layer halves the variance "
         "(2^-20 after 20 layers). The ReLU's gain makes up for it: std = sqrt(2 / ((1 + a^2) "
         "fan)), a the negative slope.",
         hints=("What does a ReLU do to the variance of what passes through it, forward and backward?",
                "Xavier's and LeCun's scales assume slope 1 around 0; a ReLU with negative slope a "
                "keeps (1 + a^2) / 2 of the variance, so the weights' variance must be 2 / (1 + a^2) "
                "times larger to make up for it.",
                "Keep the fan of the mode you were asked for; multiply the variance by the ReLU's gain.")),
]


def walk(dout, hs, weights, identity):
    """(dhs, grads) of the walk down the stack whose identity path adds ``identity`` times
    the gradient from above (see the module docstring)."""
    L = len(weights)
    dhs = np.empty(np.shape(hs))                    # L + 1, N, D
    dhs[L] = dout
    grads = [None] * L
    for layer in reversed(range(L)):
        W1, W2 = weights[layer]
        h, above = hs[layer], dhs[layer + 1]
        z = h @ W1                                  # N, H
        dz = (above @ W2.T) * (z > 0)               # N, H
        grads[layer] = (h.T @ dz, np.maximum(z, 0.0).T @ above)
        dhs[layer] = dz @ W1.T + identity * above   # N, D
    return dhs, grads


def backward_forms(dout, hs, weights, skip) -> dict:
    """{"dhs" | "dW1[l]" | "dW2[l]": {trap: [form]}} on one input (empty without the skip)."""
    forms: dict = {}
    if not skip:
        return forms
    for trap, identity in (("identity-missing", 0), ("skip-counted-twice", 2)):
        dhs, grads = walk(dout, hs, weights, identity)
        forms.setdefault("dhs", {})[trap] = [dhs]
        for layer, (dW1, dW2) in enumerate(grads):
            forms.setdefault(f"dW1[{layer}]", {})[trap] = [dW1]
            forms.setdefault(f"dW2[{layer}]", {})[trap] = [dW2]
    return forms


def norm_forms(dout, x, weights, forward) -> dict:
    """with_skip's wrong forms: the norms of the two wrong walks down the residual stack."""
    hs = forward(x, weights, True)
    return {trap: [np.sqrt(np.sum(walk(dout, hs, weights, identity)[0] ** 2, axis=(1, 2)))]
            for trap, identity in (("identity-missing", 0), ("skip-counted-twice", 2))}


def std_forms(shape, mode, negative_slope) -> dict:
    """kaiming_std's wrong forms: the other mode's fan; Xavier's scale (or no ReLU gain)."""
    fan_in, fan_out = shape
    gain2 = 2.0 / (1.0 + negative_slope ** 2)
    fan, other = (fan_in, fan_out) if mode == "fan_in" else (fan_out, fan_in)
    forms = {"fan-swapped": [np.sqrt(gain2 / other)]}
    if negative_slope < 1:  # below 1 the activation bends: Xavier's slope-1 scale is too small
        forms["xavier-with-relu"] = [np.sqrt(2.0 / (fan_in + fan_out)), np.sqrt(1.0 / fan)]
    return forms
