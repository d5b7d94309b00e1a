"""The all-reduce the grader does for the learner's simulated ranks, and counts (ddp_accumulation).

The setup cell's ``all_reduce`` is replaced, after the learner's code loads, by one that asks
the grader to do the sum (``Question.services``, as forward_vs_reverse's counted products): the
count of what crossed the collective lives here, in the grader, where learner code cannot
write. Each call is recorded with what every rank sent, so a check can tell that each rank sent
its own shard's gradient (``own_gradients``), not a token while the real sum was done elsewhere.
In process (``grade validate``) the same collective is put in the namespace for the call.
"""
from __future__ import annotations

import numpy as np

from backprop_traps.grader.engine.question import Fail

SERVICE, TALLY, HANDLE = "all_reduce", "take_all_reduced", "_collective"

HELPERS = '''
def _collective_helpers(ask):
    import numpy

    def all_reduce(tensors):
        """tensors: one array per rank, all of one shape. Every rank gets back the elementwise
        sum over the ranks (ReduceOp.SUM), done and counted by the grader."""
        items = list(tensors)
        torch_in = any(type(t).__module__.split(".")[0] == "torch" for t in items)
        out = ask("all_reduce", [numpy.asarray(t.detach().cpu() if hasattr(t, "detach") else t)
                                 for t in items])
        if torch_in:
            import torch
            return [torch.from_numpy(o) for o in out]
        return out

    def take_all_reduced():
        """Elements all-reduced (one rank's share) since the last call; starts again from 0."""
        return ask("take_all_reduced")
    return all_reduce, take_all_reduced


all_reduce, take_all_reduced = _collective_helpers(_grader_ask)
del _collective_helpers
'''


class Collective:
    """The grader's all-reduce: sums what the ranks send, counts it, and keeps a bounded record
    of the graded call's traffic. ``learner_tally`` is what the learner's ``take_all_reduced``
    reads: taking it resets nothing the checks read."""

    MAX_ELEMENTS = 1 << 20     # one rank's array; the checks' gradients are tiny
    MAX_KEPT_BYTES = 64 << 20  # what one graded call's record may hold in the grader

    def __init__(self):
        self.ranks: int | None = None
        self.calls: list[list[np.ndarray]] = []
        self.elements = 0
        self.kept = 0
        self.learner_tally = 0

    def begin(self, ranks: int) -> None:
        """A graded call on ``ranks`` ranks starts: its record starts empty."""
        self.ranks, self.calls, self.elements, self.kept = ranks, [], 0, 0

    def end(self) -> None:
        self.ranks = None

    def all_reduce(self, tensors):
        if not isinstance(tensors, (list, tuple)) or not tensors:
            raise ValueError("all_reduce takes a list with one array per rank")
        if self.ranks is not None and len(tensors) != self.ranks:
            raise ValueError(f"all_reduce takes one array per rank: got {len(tensors)} arrays, "
                             f"and there are {self.ranks} ranks")
        arrays = []
        for t in tensors:
            if not isinstance(t, np.ndarray) or t.dtype.kind not in "fiub" or t.size > self.MAX_ELEMENTS:
                raise ValueError("all_reduce takes numeric numpy arrays of a sensible size")
            arrays.append(t.astype(np.float64))
        if any(a.shape != arrays[0].shape for a in arrays):
            raise ValueError("all_reduce needs every rank's array in the same shape, got "
                             + ", ".join(str(a.shape) for a in arrays))
        summed = np.zeros(arrays[0].shape)
        with np.errstate(all="ignore"):  # a sum past float64's range is inf, as on a GPU; no warning here
            for a in arrays:  # rank order: the same sum every time
                summed += a
        self.learner_tally += arrays[0].size
        if self.ranks is not None:
            self.elements += arrays[0].size
            self.kept += sum(a.nbytes for a in arrays)
            if self.kept <= self.MAX_KEPT_BYTES:
                self.calls.append(arrays)
        return [summed.copy() for _ in range(len(arrays))]

    def take_learner_tally(self) -> int:
        counted, self.learner_tally = self.learner_tally, 0
        return counted

    def sent_by(self, rank: int, calls) -> np.ndarray:
        return np.concatenate([c[rank].ravel() for c in calls]) if calls else np.zeros(0)


def services():
    collective = Collective()
    return HELPERS, {SERVICE: collective.all_reduce, TALLY: collective.take_learner_tally,
                     HANDLE: lambda: collective}


def counted_call(ctx, fn: str, params, xs, ys, m):
    """The learner's ``fn(params, xs, ys, m)`` and the grader's record of its all-reduces."""
    handle = ctx.sandbox.services.get(HANDLE) if hasattr(ctx.sandbox, "services") else None
    collective = handle() if handle is not None else Collective()
    namespace = None if handle is not None else getattr(ctx.sandbox, "namespace", None)
    missing = object()
    saved = namespace.get(SERVICE, missing) if namespace is not None else missing
    if namespace is not None:  # in process: the grader's collective stands in for the call
        namespace[SERVICE] = collective.all_reduce
    collective.begin(len(xs))
    try:
        value = ctx.call(fn, params, xs, ys, m)
    finally:
        collective.end()
        if namespace is not None and saved is missing:
            namespace.pop(SERVICE, None)
        elif namespace is not None:
            namespace[SERVICE] = saved
    return value, collective


def own_gradients(collective: Collective, own: list[np.ndarray], size: int) -> int | None:
    """Whether each rank sent its own shard's gradient through the all-reduce: among the values
    the rank sent (fewer than ``2 * size``, checked before), ``c_r`` times its own summed
    gradient ``own[r]`` (any order, any nonzero scale), whatever else rode along (bookkeeping
    such as a row count, in a call of its own or in the gradient's bucket) and however the
    values were split into calls (one per entry included). None when every rank did; else the
    first rank that did not."""
    for r, right in enumerate(own):
        if not _holds_scaled_copy(collective.sent_by(r, collective.calls), right.ravel()):
            return r
    return None


def answer_from_sums(collective: Collective, answer: np.ndarray) -> bool:
    """Whether the sums the graded call's all-reduces returned hold ``answer`` (the gradient
    every rank must end with, flattened) at some nonzero scale, in any order: an answer built
    from them. Ranks that send their own gradients and then combine the shards by hand send
    the right traffic, but what comes back (a sum of sorted or permuted buffers, say) need
    not hold the answer."""
    with np.errstate(all="ignore"):
        returned = [np.sum(c, axis=0).ravel() for c in collective.calls]
    return _holds_scaled_copy(np.concatenate(returned) if returned else np.zeros(0), answer.ravel())


def _holds_scaled_copy(sent: np.ndarray, target: np.ndarray) -> bool:
    """Some c != 0 with every value of c * ``target`` matched by its own value of ``sent``, up
    to rounding. c is tried from each value sent, against ``target``'s largest in size."""
    if sent.size < target.size or not np.any(target) or not np.all(np.isfinite(sent)):
        return False  # NaN or inf would make a tolerance that every comparison passes
    sent = np.sort(sent)
    largest = float(target[np.argmax(np.abs(target))])
    with np.errstate(all="ignore"):
        for c in {float(v) / largest for v in sent if v != 0}:
            want = np.sort(c * target)
            tol = 1e-7 * float(np.max(np.abs(want)))
            if np.isfinite(tol) and _matched(want, sent, tol):
                return True
    return False


def _matched(want: np.ndarray, sent: np.ndarray, tol: float) -> bool:
    """Each value of ``want`` paired with a distinct value of ``sent`` within ``tol`` (both
    sorted: pairing each, in order, with the first value left that it can take is optimal)."""
    j = 0
    for w in want:
        while j < len(sent) and sent[j] < w - tol:
            j += 1
        if j == len(sent) or sent[j] > w + tol:
            return False
        j += 1
    return True


def no_collective_fail(fn: str) -> Fail:
    return Fail(f"{fn} never called all_reduce, yet every rank must end with the gradient of the "
                "whole global batch: the ranks' gradients were combined outside the collective. "
                "In data parallelism the ranks share nothing but what all_reduce carries; call the "
                "setup cell's all_reduce inside your function (the grader replaces it after your "
                "code loads, so a copy taken earlier is not the one it counts).")
