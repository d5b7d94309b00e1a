"""routing_trap's traps: the known-wrong variants, computed on a check's own inputs, and the
traps recognised by where an answer goes wrong.

``lost-overlap`` is named when dx is right at every input that lies in one window only and
wrong only where windows overlap (fancy-index ``+=``, a window's slice assigned, an
average-pool backward written for stride == kernel), and ``tie-order`` when every differing
argmax still names a tied maximum of its window.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine import feedback
from backprop_traps.grader.engine.question import Fail, Trap
from backprop_traps.grader.checks.routing_trap.probes import coverage, out_shape, windows

TRAPS = [
    Trap("avg-routing", "Your max-pool backward spreads each upstream gradient over the whole "
         "window, as average pooling does. Only the input that won the max affected the output, "
         "so route each gradient to the cached argmax position alone.",
         symptom="Your max-pool backward spreads each window's gradient over the whole window, as average pooling does.",
         hints=("Nudge an input that did not win its window: does that window's output move?",
                "Only the winner of a window affected its output, so only the winner gets its gradient.",
                "The cached argmax names each window's winner: send each dout value there alone.")),
    Trap("lost-overlap", "Where windows overlap, one input can win several windows and must "
         "receive the sum of their gradients; yours keeps only one. Fancy-index assignment or "
         "`dx[idx] += g` with repeated indices overwrites; accumulate instead (e.g. np.add.at).",
         hints=("An input that wins two overlapping windows: how many gradients should it receive?",
                "It receives the sum of every window's gradient it won, not the last one written.",
                "numpy's `dx[idx] += g` applies a repeated index once; np.add.at (or np.bincount "
                "with weights, or a loop that adds) accumulates every one.")),
    Trap("tie-broadcast", "When several inputs tie for the max, your backward copies the gradient "
         "to every one of them, so the gradient is counted several times. Route it only to the "
         "cached argmax (the first maximum).",
         symptom="When several inputs tie for a window's max, your backward gives the gradient to every one of them.",
         hints=("How many inputs did the forward pick as the winner of a tied window?",
                "One: the first maximum. The output moves with that input alone.",
                "Route by the cached argmax, never by comparing values with the max again.")),
    Trap("tie-order", "On ties your argmax picks another of the tied maxima than the first one in "
         "row-major order (the last one, or the first one column by column); the rule (as in "
         "PyTorch) is the first maximum in row-major order: scan row by row, left to right, and "
         "replace the running max only when a value is strictly greater.",
         symptom="On ties your argmax names another of the tied maxima than the first one in row-major order.",
         hints=("When a window holds its maximum twice, which of the two does your forward keep?",
                "The first maximum in row-major order wins (row by row, left to right), as in PyTorch.",
                "np.argmax of a flattened window already returns the first; a hand-written scan "
                "must replace the running max only on a strictly greater value (>, not >=).")),
    Trap("avg-unscaled", "Your average-pool backward forgets to divide by the window size: each "
         "input's share of an output is 1 / (k * k) of its gradient.",
         symptom="Your average-pool backward is k * k times too large.",
         hints=("How much does one input move the mean of k * k values when it moves by 1?",
                "By 1 / (k * k): that is each input's share of its window's gradient.",
                "Divide each dout value by k * k before spreading it over the window.")),
    Trap("tie-split", "When several inputs tie for the max, your backward splits the gradient "
         "equally among them. The forward picked one winner (the first maximum) and the output "
         "moves with that input alone: route the whole gradient to the cached argmax."),
    Trap("argmax-in-window", "Your argmax is the position of the winner inside its k x k window "
         "(0 to k * k - 1). The backward gets no x and no window position, so it needs the flat "
         "index h * W + w of the winner in the whole (H, W) input plane: add the window's top-left "
         "corner (row i * stride, column j * stride) to the winner's row and column first."),
]
EXPLANATION = {t.id: t.explanation for t in TRAPS}


def lost_overlap(dout, argmax, shape, k, s):
    n, c, h, w = shape
    dx = np.zeros((n, c, h * w))
    ni, ci = np.meshgrid(np.arange(n), np.arange(c), indexing="ij")
    dx[ni[..., None, None], ci[..., None, None], argmax] += dout  # buffered: repeats overwrite
    return dx.reshape(shape)


def tie_broadcast(x, dout, k, s, split=False):
    """Every tied maximum gets the window's gradient (``split``: an equal share of it)."""
    dx = np.zeros_like(x)
    out = np.full(out_shape(x.shape, k, s), -np.inf)
    for win in windows(x.shape, k, s):
        out = np.maximum(out, x[win])
    tied = sum((x[win] == out).astype(np.float64) for win in windows(x.shape, k, s))
    for win in windows(x.shape, k, s):
        dx[win] += (dout / tied if split else dout) * (x[win] == out)
    return dx


def last_max_argmax(x, k, s):
    h, w = x.shape[2:]
    best = np.full(out_shape(x.shape, k, s), -np.inf)
    arg = np.zeros(best.shape, dtype=np.int64)
    _, _, ho, wo = best.shape
    oy, ox = np.meshgrid(np.arange(ho) * s, np.arange(wo) * s, indexing="ij")
    for dy in range(k):
        for dx in range(k):
            vals = x[:, :, dy:dy + s * (ho - 1) + 1:s, dx:dx + s * (wo - 1) + 1:s]
            take = vals >= best
            best = np.where(take, vals, best)
            arg = np.where(take, (oy + dy) * w + (ox + dx), arg)
    return arg


def window_index(argmax, shape, k, s):
    """The cached flat index h * W + w turned into the index inside its window (dy * k + dx)."""
    w = shape[3]
    _, _, ho, wo = argmax.shape
    oy, ox = np.meshgrid(np.arange(ho) * s, np.arange(wo) * s, indexing="ij")
    return (argmax // w - oy) * k + (argmax % w - ox)


def ties_elsewhere(ctx, x, got, k, s) -> bool:
    """Behaviour of ``tie-order``: every argmax that differs from the reference still names a
    maximum of its own window (a tied one, just not the first in row-major order)."""
    ref_out, ref_arg = ctx.ref.maxpool2d_forward(x, k, s)
    got = np.asarray(got)
    if got.shape != ref_arg.shape or got.dtype.kind not in "iu" or not (got != ref_arg).any():
        return False
    n, c, h, w = x.shape
    _, _, ho, wo = ref_arg.shape
    oy, ox = np.meshgrid(np.arange(ho) * s, np.arange(wo) * s, indexing="ij")
    row, col = got // w, got % w
    inside = (got >= 0) & (got < h * w) & (row >= oy) & (row < oy + k) & (col >= ox) & (col < ox + k)
    if not inside.all():
        return False
    picked = np.take_along_axis(x.reshape(n, c, h * w), got.reshape(n, c, -1), axis=2)
    return bool(np.array_equal(picked.reshape(got.shape), ref_out))



def overlap_lost(ctx, fn, got, right, shape, k, s, failure: Fail, avg=False) -> Fail | None:
    """``lost-overlap`` recognised by where it shows: ``got`` is right at every input that lies
    in one window only and wrong only where windows overlap, whatever the code looked like
    (fancy-index ``+=``, assigning a window's whole slice, an overwrite in a loop)."""
    if failure.trap is not None or not feedback.differs_only_in(got, right, coverage(shape, k, s) > 1):
        return None
    if avg:
        why = ("each input must receive a share from every window that contains it, added up; yours "
               "keeps one window's share. Assigning a window's slice (as if the stride were the window "
               "size) overwrites the shares already there: add into the slice instead.")
    else:
        why = EXPLANATION["lost-overlap"]
    details = failure.feedback.partition("\n")[2]
    return Fail(f"`dx` from {fn} is right wherever an input lies in one window only, and wrong only "
                f"where windows overlap (k={k}, stride={s}). {why}" + (f"\n{details}" if details else ""),
                "lost-overlap")

