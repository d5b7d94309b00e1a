"""The wrong variants of bptt, each computed on a check's own inputs.

Shapes as in the contract: x (T, N, D), h0 (N, H), hs and dhs (T, N, H), W_xh (D, H),
W_hh (H, H), b (H,). Every backward variant here is one walk back through time in which
the carry into step t - 1 is dropped at a chosen set of steps ("cuts"): no cuts is full
BPTT, every step cut is no carry at all, and truncation's boundaries one step off are cuts
shifted by one. ``walk_back`` also keeps each step's dz, from which one step's share of a
weight gradient (last-step-only) is read.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Trap

FWD, BWD, CLIP = "rnn_forward", "rnn_backward", "clip_grad_norm"
GRADS = ("dx", "dh0", "dW_xh", "dW_hh", "db")  # the backward's answer, in order

TRAPS = [
    Trap("last-step-only", "A weight gradient holds one step's contribution: it is assigned at "
         "every step instead of added to, so only the last step walked survives. W_xh, W_hh "
         "and b are used at every step of the sequence, and their gradients are the sum of "
         "every step's share."),
    Trap("no-carry", "The hidden state's gradient is not carried back: each step backpropagates "
         "only its own output's gradient. h_t also feeds step t + 1, so its gradient is its own "
         "output's plus what comes back from step t + 1 through W_hh."),
    Trap("truncation-off-by-one", "The truncation's chunk boundaries are one step off. The "
         "chunks are steps [0, k), [k, 2k), ...: the carry is dropped only into the last step of "
         "a chunk, from the first step of the next one (a step t that is a positive multiple of "
         "k), and every other step carries."),
    Trap("clip-per-tensor", "Each gradient is clipped by its own norm. Clipping by the global "
         "norm takes one norm over every entry of every gradient and scales all of them by the "
         "same factor, so the update keeps its direction."),
]


def walk_back(dhs, x, h0, hs, W_xh, W_hh, cuts):
    """(dx, dh0, dW_xh, dW_hh, db, dzs): BPTT where the carry into t - 1 is dropped at every
    step t in ``cuts`` (t > 0), dzs (T, N, H) each step's gradient at its pre-activation."""
    T = x.shape[0]
    dx, dzs = np.zeros_like(x), np.zeros_like(hs)                       # T, N, D; T, N, H
    dW_xh, dW_hh, db = np.zeros_like(W_xh), np.zeros_like(W_hh), np.zeros(W_hh.shape[0])
    carry, dh0 = np.zeros_like(h0), np.zeros_like(h0)                   # N, H
    for t in reversed(range(T)):
        dz = (dhs[t] + carry) * (1.0 - hs[t] ** 2)
        dzs[t] = dz
        dW_xh += x[t].T @ dz
        dW_hh += (hs[t - 1] if t > 0 else h0).T @ dz
        db += dz.sum(axis=0)
        dx[t] = dz @ W_xh.T
        carry = dz @ W_hh.T
        if t == 0:
            dh0 = carry
        elif t in cuts:
            carry = np.zeros_like(h0)
    return dx, dh0, dW_xh, dW_hh, db, dzs


def chunk_starts(T: int, k: int, offset: int = 0) -> set:
    """The steps t > 0 that start a chunk of ``k`` steps, boundaries shifted by ``offset``."""
    return {t for t in range(1, T) if (t - offset) % k == 0}


def backward_forms(dhs, x, h0, hs, W_xh, W_hh, k) -> dict:
    """{"dx" | "dh0" | "dW_xh" | "dW_hh" | "db": {trap: [forms]}} on one input."""
    T = x.shape[0]
    right = chunk_starts(T, k)
    wrong: dict = {name: {} for name in GRADS}

    def add(trap, grads):
        for name, value in zip(GRADS, grads):
            wrong[name].setdefault(trap, []).append(value)

    if right != set(range(1, T)):
        add("no-carry", walk_back(dhs, x, h0, hs, W_xh, W_hh, set(range(1, T)))[:5])
    shifted = [chunk_starts(T, k, 1), chunk_starts(T, k, -1), chunk_starts(T, k + 1),
               {t for t in range(1, T) if (T - t) % k == 0}]  # chunks counted from the end
    if k > 1:
        shifted.append(chunk_starts(T, k - 1))
    for cuts in shifted:  # even k >= T has them: a cut one step off at t = 1, say
        if cuts != right and cuts != set(range(1, T)):
            add("truncation-off-by-one", walk_back(dhs, x, h0, hs, W_xh, W_hh, cuts)[:5])
    dzs = walk_back(dhs, x, h0, hs, W_xh, W_hh, right)[5]
    for t in {0, T - 1}:  # the last step walked, or the first
        h_prev = hs[t - 1] if t > 0 else h0
        one = [None, None, x[t].T @ dzs[t], h_prev.T @ dzs[t], dzs[t].sum(axis=0)]
        for name, value in zip(GRADS[2:], one[2:]):
            wrong[name].setdefault("last-step-only", []).append(value)
    return wrong


def clip_forms(grads, max_norm) -> list:
    """Per-tensor clipping of ``grads``: each by its own norm."""
    out = []
    for g in grads:
        norm = float(np.sqrt(np.sum(g * g)))
        out.append(g * (max_norm / norm) if norm > max_norm else g.copy())
    return out
