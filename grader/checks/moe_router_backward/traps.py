"""The wrong variants of moe_router_backward, each computed on a check's own inputs.

Shapes as in the contract: x (N, D), Wr (D, E), logits = x @ Wr (N, E), idx and gates and
dgates (N, k). Every backward here is a gradient at the logits, ``dlogits`` (N, E), taken to
``dx = dlogits @ Wr.T`` and ``dWr = x.T @ dlogits`` as the right one is: the gates' part and
the auxiliary loss's part add, and each trap changes one of them.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

FWD, BWD = "router_forward", "router_backward"

TRAPS = [
    Trap("unselected-gradient", "The gates send gradient to experts the token did not select. "
         "The gates are a softmax over the k selected logits alone: an unselected expert's logit "
         "appears in none of them, not even in their denominator, so its gradient from the gates "
         "is exactly 0. Differentiating the softmax over all experts while the renormalising sum "
         "is held constant (or scattering the k values to the wrong columns) leaks it to the "
         "others. Scatter the k-by-k softmax backward to the columns idx names, zeros elsewhere.",
         symptom="Your backward sends the gates' gradient to experts outside the token's top k."),
    Trap("softmax-then-topk", "These are the gates of a softmax over all E experts followed by "
         "top-k, never renormalised: they sum to less than 1 per token, and since every logit sits "
         "in that softmax's denominator, their backward reaches every expert. The contract's gates "
         "are a softmax over the k selected logits only (equal to renormalising those k "
         "probabilities so they sum to 1), and their backward stays on the k selected experts.",
         symptom="Your gates are the top k of a softmax over all E experts, never renormalised."),
    Trap("aux-detached", "The load-balancing loss's gradient is missing: the answer is the "
         "gates' gradient alone. aux_loss = aux_coef * E * sum_i f_i P_i is part of the loss; f is "
         "a count and is held constant, but P_i, the mean over tokens of the softmax over all "
         "experts, depends on every logit. Its gradient is aux_coef * E * f_i / N at each "
         "probability, taken back through each token's softmax over all E experts.",
         symptom="Your dx and dWr carry no gradient from the load-balancing loss."),
]


def softmax(z):
    """Row-wise softmax of a 2-D array."""
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def scatter(values, idx, E):
    """values (N, k) placed at the columns idx names in an (N, E) array of zeros."""
    out = np.zeros((idx.shape[0], E))
    np.put_along_axis(out, idx, values, axis=1)
    return out


def aux_dlogits(x, Wr, idx, aux_coef):
    """The auxiliary loss's gradient at the logits (N, E): through P, every expert."""
    p = softmax(x @ Wr)
    N, E = p.shape
    a = aux_coef * E * np.bincount(idx.ravel(), minlength=E) / (idx.size * N)
    return p * (a - np.sum(p * a, axis=1, keepdims=True))


def gate_dlogits(dgates, x, Wr, idx) -> dict:
    """The gates' gradient at the logits (N, E): the right one ("right") and each trap's forms."""
    logits = x @ Wr
    N, E = logits.shape
    k = idx.shape[1]
    p = softmax(logits)
    gates = softmax(np.take_along_axis(logits, idx, axis=1))
    dtop = gates * (dgates - np.sum(gates * dgates, axis=1, keepdims=True))
    dG = scatter(dgates, idx, E)
    S = np.take_along_axis(p, idx, axis=1).sum(axis=1, keepdims=True)  # the renormalising sum
    columns = np.zeros((N, E))
    columns[:, :k] = dtop  # the k values at columns 0..k-1, not at idx
    return {
        "right": scatter(dtop, idx, E),
        "unselected-gradient": [p * (dG / S - np.sum(p * dG, axis=1, keepdims=True) / S), columns],
        "softmax-then-topk": [p * (dG - np.sum(p * dG, axis=1, keepdims=True))],
    }


def backward_forms(dgates, x, Wr, idx, aux_coef) -> dict:
    """{"dx" | "dWr": {trap: [form]}} on one input. aux-detached is offered only where the
    auxiliary loss has a gradient (aux_coef != 0)."""
    gate = gate_dlogits(dgates, x, Wr, idx)
    aux = aux_dlogits(x, Wr, idx, aux_coef)
    forms: dict = {"dx": {}, "dWr": {}}

    def add(trap, dlogits):
        forms["dx"].setdefault(trap, []).append(dlogits @ Wr.T)
        forms["dWr"].setdefault(trap, []).append(x.T @ dlogits)
    for trap in ("unselected-gradient", "softmax-then-topk"):
        for wrong in gate[trap]:
            add(trap, wrong + aux)
    if aux_coef != 0:
        add("aux-detached", gate["right"])
    return forms


def forward_forms(x, Wr, idx) -> dict:
    """gates' wrong form: the top k of the softmax over all experts (the same idx: softmax keeps
    the order), not renormalised."""
    return {"softmax-then-topk": [np.take_along_axis(softmax(x @ Wr), idx, axis=1)]}
