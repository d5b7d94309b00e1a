"""The wrong variants of weight_tying, each computed on a check's own inputs.

Shape letters: V tokens, D features, N positions. Every variant here is the tied model with its
two reads of E named apart, E_in (the lookup, x = E_in[ids]) and E_out (the projection, logits
= h @ E_out.T): ``parts`` gives each read's share of the gradient, and a variant is which
shares reach which read. The right answer is the sum of both shares, applied to one matrix;
the checks compare with the reference (``ctx.ref``), never with ``parts``' sum, which
tests/questions/test_weight_tying.py proves equal to it.
"""
from __future__ import annotations

import itertools

import numpy as np

from backprop_traps.grader.engine.question import Trap

FWD, BWD, TRAIN = "tied_lm_forward", "tied_lm_backward", "tied_lm_train"

TRAPS = [
    Trap("one-path-only", "dE holds the gradient of only one of E's two uses. E is read twice, by "
         "the embedding lookup and by the output projection, so by the multivariable chain rule its "
         "gradient is the sum of both uses' gradients: the projection's dlogits^T h (every row) "
         "plus the lookup's scatter-add of dx into the rows of the ids (repeated ids add up).",
         symptom="dE holds the gradient of only one of E's two uses."),
    Trap("output-transposed", "The output projection's gradient is in the transposed layout. "
         "logits = h @ E.T reads E as a (D, V) matrix: the gradient of that read is h^T dlogits, "
         "(D, V), and E's own gradient is its transpose, dlogits^T h, (V, D), the shape of E. The "
         "wrong layout has E's shape only when V = D, where its values are wrong; the same goes "
         "for dh, which is dlogits @ E, (N, V)(V, D).",
         symptom="The output projection's share of the gradient is in the transposed layout."),
    Trap("untied-copy", "Training unties the two uses: the embedding and the projection read two "
         "matrices that started equal and then moved apart. A copy makes two parameters, each moved "
         "by its own use's gradient; an update that gives one use's name a new array while the "
         "other use still holds the old one leaves that one where it was. Keep one array that both "
         "uses read, and move it by the sum of both gradients (in place, or rebind every name "
         "that reads it).",
         symptom="After training, the two uses of E read matrices that moved apart."),
]


def parts(E_in, E_out, W, ids, targets, dh_transposed=False):
    """(loss, share_in (V, D), share_out (V, D), share_out_T (D, V), dW (D, D)) of the model that
    reads E_in in the lookup and E_out in the projection. ``dh_transposed``: dh = dlogits @ E.T
    (only when V = D)."""
    N = len(ids)
    x = E_in[ids]                                         # N, D
    h = np.tanh(x @ W)                                    # N, D
    logits = h @ E_out.T                                  # N, V
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    dlogits = np.exp(logp)
    dlogits[np.arange(N), targets] -= 1.0
    dlogits /= N                                          # N, V
    dh = dlogits @ (E_out.T if dh_transposed else E_out)  # N, D
    dz = dh * (1.0 - h ** 2)
    share_in = np.zeros_like(E_in)
    np.add.at(share_in, ids, dz @ W.T)                    # V, D
    loss = float(-np.mean(logp[np.arange(N), targets]))
    return loss, share_in, dlogits.T @ h, h.T @ dlogits, x.T @ dz


def backward_forms(E, W, ids, targets) -> dict:
    """{"dE" | "dW": {trap: [form]}}: the wrong gradients on one input. The transposed layout
    is named by value where V = D, and by its (D, V) shape otherwise."""
    _, share_in, share_out, share_out_T, _ = parts(E, E, W, ids, targets)
    forms = {"dE": {"one-path-only": [share_out, share_in]}, "dW": {}}
    if E.shape[0] != E.shape[1]:
        forms["dE"]["output-transposed"] = [(share_in + share_out).T, share_out_T]
        return forms
    _, in_t, out_t, out_T_t, dW_t = parts(E, E, W, ids, targets, dh_transposed=True)
    forms["dE"]["output-transposed"] = [share_out_T + share_in, out_t + in_t, out_T_t + in_t, share_out_T]
    forms["dW"]["output-transposed"] = [dW_t]
    return forms


RULES = ("sum", "own", "frozen", "in", "out")
"""How a read's matrix moves at each step: by the sum of both shares, by its own use's share,
not at all, by the lookup's share, by the projection's share."""
UNTIED = [pair for pair in itertools.product(("sum", "own", "frozen"), repeat=2)
          if pair not in (("sum", "sum"), ("frozen", "frozen"))]
"""Two matrices that start equal and move apart (both frozen is no training at all)."""
ONE_PATH = [("in", "in"), ("out", "out")]
"""One matrix (both reads move alike) moved by one use's share only."""


def trajectory(E, W, ids, targets, lr, steps, rule_in, rule_out):
    """(E_in, E_out, W, losses) after ``steps`` steps in which each read moves by its rule."""
    E_in, E_out, W = E.copy(), E.copy(), W.copy()
    losses = np.empty(steps)
    for k in range(steps):
        losses[k], share_in, share_out, _, dW = parts(E_in, E_out, W, ids, targets)
        moves = {"sum": share_in + share_out, "in": share_in, "out": share_out, "frozen": 0.0}
        E_in = E_in - lr * moves["in" if rule_in == "own" else rule_in]
        E_out = E_out - lr * moves["out" if rule_out == "own" else rule_out]
        W = W - lr * dW
    return E_in, E_out, W, losses


def train_forms(E, W, ids, targets, lr, steps) -> dict:
    """{"E_embed" | "E_out" | "W" | "losses": {trap: [form]}}: the untied and the one-path
    trajectories of tied_lm_train on one input."""
    forms: dict = {name: {} for name in ("E_embed", "E_out", "W", "losses")}
    for trap, variants in (("untied-copy", UNTIED), ("one-path-only", ONE_PATH)):
        for rule_in, rule_out in variants:
            for name, value in zip(forms, trajectory(E, W, ids, targets, lr, steps, rule_in, rule_out)):
                forms[name].setdefault(trap, []).append(value)
    return forms
