"""The mistakes memory_budget names, each computed on a check's own inputs.

A plan is named ``greedy-ratio`` when it recomputes exactly what filling the budget in order of
recompute cost per unit gives (taking what still fits, or stopping at the first op that does
not) and that is more than the best plan; ``over-budget`` when it keeps more than the budget.
The reversible block's wrong forms are the inverse that undoes the first coupling first (it
reads y2 where x2 belongs) and the backward that forgets that y1 also reached the loss
through G(y1). Offloading's are one direction of the copy only, and a step that adds the copy
to the compute although they overlap.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

TRAPS = [
    Trap("greedy-ratio", "The plan keeps activations in order of recompute cost per unit of memory "
         "until the budget is full. That is the greedy answer to a 0/1 knapsack, and it is not the "
         "best: a first pick that leaves a gap can shut out a pair that fits exactly and saves more. "
         "Search the choices exactly (dynamic programming over the budget, or every subset when "
         "there are few).",
         symptom="The plan is what keeping the best cost per unit first gives, and it recomputes "
                 "more than the best plan within the budget."),
    Trap("over-budget", "The activations the plan keeps add up to more than the budget. Every kept "
         "activation stays in memory until the backward pass needs it, so the sum of the kept sizes "
         "must stay at or below the budget (equal to it is allowed).",
         symptom="The sizes the plan keeps add up to more than the budget."),
    Trap("inverse-order", "The inverse undoes the first coupling first, and reads y2 where x2 "
         "belongs: x1 = y1 - F(x2) needs x2, which only the second coupling can give back. Undo the "
         "couplings in reverse order: x2 = y2 - G(y1) first (y1 is known), then x1 = y1 - F(x2).",
         symptom="The rebuilt x1 is y1 - F(y2): the couplings were undone in the forward's order."),
    Trap("cross-term-dropped", "The gradient reaching y1 misses its share through G: y1 feeds the "
         "loss directly and through y2 = x2 + G(y1), so dy1 must gain (dy2 * G') Wg^T before it "
         "goes back through the first coupling.",
         symptom="dx1 is the incoming dy1 alone: y1's path through G(y1) into y2 is missing."),
    Trap("stores-everything", "The gradients are right, but the call keeps every block's activations "
         "until its backward: memory grows with the number of blocks. A reversible block's inputs "
         "can be rebuilt from its outputs, so keep only the current block's outputs and rebuild "
         "the rest on the way back.",
         symptom="Peak memory grows with the number of blocks: every block's activations are kept."),
    Trap("one-way", "The transfer time counts one direction only. Offloaded activations go to the "
         "host after the forward and come back before the backward: each byte crosses the link twice.",
         symptom="The transfer time is half the right one: each byte crosses the link once, not twice."),
    Trap("overlap-adds", "With the copies overlapped, the step adds the transfer time to the compute. "
         "Copies on their own stream run beside the compute, so the step takes the longer of the two, "
         "not their sum.",
         symptom="With overlap the step time is compute + transfer, as if nothing overlapped."),
]


def greedy_plans(sizes, costs, budget) -> list[np.ndarray]:
    """The two greedy plans by cost per unit: taking whatever still fits, and stopping at the
    first op that does not."""
    order = np.argsort(-(costs / sizes), kind="stable")
    plans = []
    for stop in (False, True):
        keep, used = np.zeros(len(sizes), dtype=bool), 0
        for i in order:
            if used + sizes[i] <= budget:
                keep[i], used = True, used + int(sizes[i])
            elif stop:
                break
        plans.append(keep)
    return plans


def tanh_layer(z, W, b):
    return np.tanh(z @ W + b)


def inverse_in_forward_order(y1, y2, Wf, bf, Wg, bg):
    """(x1, x2) by the inverse that undoes the first coupling first, y2 read for x2."""
    return y1 - tanh_layer(y2, Wf, bf), y2 - tanh_layer(y1, Wg, bg)


def backward_without_cross_term(dy1, dy2, y1, y2, Wf, bf, Wg, bg):
    """rev_backward's gradients (dx1, dx2, dWf, dbf, dWg, dbg) with dy1's share through G
    dropped (G's own weights still get theirs)."""
    g = tanh_layer(y1, Wg, bg)
    x2 = y2 - g
    f = tanh_layer(x2, Wf, bf)
    du = dy2 * (1.0 - g * g)
    dv = dy1 * (1.0 - f * f)
    return dy1, dy2 + dv @ Wf.T, x2.T @ dv, dv.sum(axis=0), y1.T @ du, du.sum(axis=0)


def offload_forms(nbytes, compute_s, bandwidth_gb_s, overlap) -> dict:
    """The wrong (transfer_s, step_s) pairs."""
    rate = bandwidth_gb_s * 1e9
    one_way = nbytes / rate
    both = 2.0 * nbytes / rate
    step = (lambda t: max(compute_s, t)) if overlap else (lambda t: compute_s + t)
    forms = {"one-way": (one_way, step(one_way))}
    if overlap:
        forms["overlap-adds"] = (both, compute_s + both)
    return forms
