"""The all-reduce the grader does for the child, and counts: the count lives in the grader,
where learner code cannot write, and the sums it returned are kept so a check can ask whether
an answer came out of them (an answer summed by hand, plus a token call, does not)."""
from __future__ import annotations

import numpy as np

HELPERS = '''
def _collective(ask):
    import numpy

    def _plain(t):
        return numpy.asarray(t.detach().cpu() if hasattr(t, "detach") else t)

    def all_reduce(tensors):
        """The sum over ranks, done and counted by the grader: a list of P arrays of one shape in,
        a list of P new arrays out, each the elementwise sum."""
        if not isinstance(tensors, (list, tuple)):
            raise ValueError("all_reduce takes a list holding one array for each rank")
        value = ask("all_reduce", [_plain(t) for t in tensors])
        if any(type(t).__module__.split(".")[0] == "torch" for t in tensors):
            import torch
            return [torch.from_numpy(v) for v in value]
        return value

    def take_all_reduces():
        """The all_reduce calls since the last call (yours; the grader keeps its own count)."""
        return ask("take_all_reduces")
    return all_reduce, take_all_reduces


all_reduce, take_all_reduces = _collective(_grader_ask)
del _collective
'''


class AllReduce:
    """The setup cell's ``all_reduce``, run in the grader. ``begin(P)`` opens a graded call:
    from then each collective must carry exactly P arrays, is counted in ``calls``, and its sum
    is kept (bounded) for ``came_from_sums``. The learner's ``take_all_reduces`` reads a
    separate tally: it cannot reset the grader's count."""

    MAX_RANKS = 64
    MAX_ELEMENTS = 1 << 20  # per collective, all ranks together (the checks' are tiny)
    MAX_KEPT_BYTES = 32 << 20

    def __init__(self):
        self.calls, self.learner_tally, self.ranks = 0, 0, None
        self.sums: list[np.ndarray] = []
        self.kept = 0

    def begin(self, ranks: int) -> None:
        self.calls, self.ranks, self.sums, self.kept = 0, ranks, [], 0

    def end(self) -> None:
        self.ranks, self.sums = None, []

    def all_reduce(self, tensors):
        if not isinstance(tensors, list) or not 1 <= len(tensors) <= self.MAX_RANKS:
            raise ValueError("all_reduce takes a list holding one array for each rank")
        if self.ranks is not None and len(tensors) != self.ranks:
            raise ValueError(f"all_reduce needs one array per rank: {self.ranks} ranks, got {len(tensors)} arrays")
        if not all(isinstance(t, np.ndarray) and t.dtype.kind in "fiub" for t in tensors):
            raise ValueError("all_reduce needs numeric numpy arrays")
        if any(t.shape != tensors[0].shape for t in tensors) or \
                sum(t.size for t in tensors) > self.MAX_ELEMENTS:
            raise ValueError(f"all_reduce needs one shape on every rank, of a sensible size; got "
                             f"{[t.shape for t in tensors][:8]}")
        total = tensors[0].astype(np.float64)  # a new array, even of 0 dimensions
        with np.errstate(all="ignore"):  # a sum past float64's range is inf, as on a GPU; no warning here
            for t in tensors[1:]:  # in rank order, as the setup cell does
                np.add(total, t, out=total)
        self.calls += 1
        self.learner_tally += 1
        if self.ranks is not None and self.kept + total.nbytes <= self.MAX_KEPT_BYTES:
            self.kept += total.nbytes
            self.sums.append(total)
        return [total.copy() for _ in tensors]

    def take_learner_tally(self) -> int:
        counted, self.learner_tally = self.learner_tally, 0
        return counted

    def came_from_sums(self, arrays, offset=None) -> bool:
        """Whether every array is one of the sums this call's collectives returned: less
        ``offset`` (a bias added after the sum), or as it is (the bias went into the sum once,
        added on one rank or split over them: the same values, from the same one collective)."""
        for a in arrays:
            if not isinstance(a, np.ndarray) or a.dtype.kind not in "fiu":
                return False
            a = a.astype(np.float64)
            forms = (a,) if offset is None else (a - offset, a)
            if not any(s.shape == f.shape and np.allclose(f, s, rtol=1e-9, atol=1e-12)
                       for f in forms for s in self.sums):
                return False
        return True


def services():
    counter = AllReduce()
    return HELPERS, {"all_reduce": counter.all_reduce, "take_all_reduces": counter.take_learner_tally,
                     "_counter": lambda: counter}
