"""backprop_ninja's traps: what each mistake is, and what it makes of the gradients.

Each wrong form is read off the reference's own answers on the same input, so that no
right formula is written here a second time: a mistake is recognised where it first shows,
the first gradient along the backward pass that differs from the reference's.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

TRAPS = [
    Trap("embedding-overwrite", "Token ids that repeat lose gradient: where one id appears at "
         "several positions, its row of dE keeps one position's gradient instead of their sum. "
         "The lookup copies a row of E to every position that names it, so the backward must "
         "add every position's gradient into that row. An indexed += in numpy is buffered: with "
         "repeated indices only one addition lands. This is the max-pool routing trap's sibling."),
    Trap("tied-not-summed", "dE holds only one of its two gradients. E is used twice, as the "
         "embedding and as the output layer (logits = z times E transposed), so its gradient is "
         "the sum of both paths: the output layer's, from dlogits and z, plus the embedding's "
         "scatter of demb into the rows the ids name."),
    Trap("dropout-unscaled", "Dropout's scale is missing: every gradient below dropout (or the "
         "forward's hdrop) is (1 - p_drop) times the right one. Inverted dropout multiplies the "
         "kept units by 1 / (1 - p_drop) in the forward, so its backward multiplies the upstream "
         "gradient by the same mask and the same scale."),
    Trap("tanh-derivative-from-input", "tanh's derivative is evaluated at the wrong tensor, its "
         "input hln. The formula 1 - u^2 holds for u = tanh(hln), the layer's output h: use the "
         "cached output (or 1 - tanh(hln)^2)."),
]


def scatter(idx, demb, V, mode):
    """demb's rows put into a (V, C) array by id: "add" (every position), "last" or "first"
    (one position per id, as a buffered or overwriting assignment keeps)."""
    flat_idx, rows = idx.ravel(), demb.reshape(idx.size, -1)
    out = np.zeros((V, rows.shape[1]))
    if mode == "add":
        np.add.at(out, flat_idx, rows)
        return out
    order = range(flat_idx.size) if mode == "last" else reversed(range(flat_idx.size))
    for i in order:
        out[flat_idx[i]] = rows[i]
    return out


def backward_forms(prob) -> dict[str, dict[str, list]]:
    """{gradient: {trap: [wrong forms]}} on ``prob``'s input, given right upstream gradients."""
    g, cache, p = prob.grads, prob.cache, prob.p_drop
    V = prob.params["E"].shape[0]
    embedding = scatter(prob.idx, g["demb"], V, "add")
    output = g["dE"] - embedding  # the output layer's part
    overwritten = [scatter(prob.idx, g["demb"], V, mode) for mode in ("last", "first")]
    return {
        "dh": {"dropout-unscaled": [g["dh"] * (1.0 - p)]},
        "dhln": {"tanh-derivative-from-input": [g["dh"] * (1.0 - cache["hln"] ** 2)]},
        "dE": {"embedding-overwrite": [output + w for w in overwritten],
               "tied-not-summed": [output, embedding] + overwritten},
    }


def forward_forms(prob) -> dict[str, dict[str, list]]:
    """{cache key: {trap: [wrong forms]}}: the forward's dropout without its scale."""
    return {"hdrop": {"dropout-unscaled": [prob.cache["h"] * prob.keep]}}
