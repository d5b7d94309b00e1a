"""Products the grader does for the child and counts (a cost check's multiply-adds): the
count lives in the grader, where learner code cannot write, and only products on the graded
call's own chain count (issue 23, class 2)."""
from __future__ import annotations

import numpy as np


class Counter:
    """The setup cell's helpers, run in the grader: each product is done and counted here.

    A product counts only when it is on the graded call's own chain (``begin``): its matrix
    is one of the chain's ``As`` or its transpose (or, for ``matmul``, a product of them already returned),
    and its vector is the call's input, a unit vector (a Jacobian's column or row), or the
    output of an earlier counted product of the same call. So padding with dummy products,
    or computing the answer uncounted and sending one token product through the counter,
    counts nothing. ``outputs`` keeps what the grader returned, so a check can require
    that the answer came out of the counted products. The learner's own
    ``take_multiply_adds`` reads a separate tally: it cannot reset the grader's."""

    MAX_ELEMENTS = 1 << 20  # no product the grader does may exceed this (a chain's are tiny)
    MAX_KEPT_BYTES = 64 << 20  # products remembered per call: the grader's memory is bounded

    def __init__(self):
        self.multiply_adds = 0
        self.learner_tally = 0
        self.allowed: set = set()
        self.outputs: set = set()

    def begin(self, As, *inputs) -> None:
        """A new graded call on the chain ``As`` with its vector ``inputs`` (none for a Jacobian)."""
        self.multiply_adds, self.kept = 0, 0
        # A^T too: matvec(A.T, u) is a VJP's product as much as vecmat(u, A), at the same price
        chain = [np.asarray(A, dtype=np.float64) for A in As]
        self.allowed = {_key(A) for A in chain} | {_key(A.T) for A in chain if A.ndim == 2}
        self.outputs = {_key(np.asarray(v, dtype=np.float64)) for v in inputs}

    def end(self) -> None:
        """The graded call is over: nothing it sent stays in the grader."""
        self.allowed, self.outputs = set(), set()

    def _keep(self, into: set, a) -> bool:
        self.kept += a.nbytes
        if self.kept <= self.MAX_KEPT_BYTES:
            into.add(_key(a))
        return self.kept <= self.MAX_KEPT_BYTES

    def _matrix(self, name, a, ndim):
        if not isinstance(a, np.ndarray) or a.ndim != ndim or a.dtype.kind not in "fiu" \
                or a.size > self.MAX_ELEMENTS:
            raise ValueError(f"{name} must be a {ndim}-d numeric numpy array of a sensible size")
        return a.astype(np.float64, copy=False)

    def _on_chain(self, a) -> bool:
        """Whether ``a`` is the call's input, a product it returned, or a unit vector / identity."""
        key = _key(a)
        if key in self.allowed or key in self.outputs:
            return True
        return (a.ndim == 1 and np.count_nonzero(a) == 1 and a.max() == 1.0) or \
            (a.ndim == 2 and a.shape[0] == a.shape[1] and np.array_equal(a, np.eye(a.shape[0])))

    def _done(self, counts: bool, result, adds):
        if counts and self._keep(self.outputs, result):
            self.multiply_adds += adds
        self.learner_tally += adds
        return result

    def matvec(self, A, v):
        A, v = self._matrix("A", A, 2), self._matrix("v", v, 1)
        if A.shape[1] != v.shape[0]:
            raise ValueError(f"matvec(A, v) needs A (m, n) and v (n,), got A {A.shape} and v {v.shape}")
        return self._done(_key(A) in self.allowed and self._on_chain(v), A @ v, A.shape[0] * A.shape[1])

    def vecmat(self, u, A):
        u, A = self._matrix("u", u, 1), self._matrix("A", A, 2)
        if u.shape[0] != A.shape[0]:
            raise ValueError(f"vecmat(u, A) needs u (m,) and A (m, n), got u {u.shape} and A {A.shape}")
        return self._done(_key(A) in self.allowed and self._on_chain(u), u @ A, A.shape[0] * A.shape[1])

    def matmul(self, A, B):
        A, B = self._matrix("A", A, 2), self._matrix("B", B, 2)
        if A.shape[1] != B.shape[0] or A.shape[0] * B.shape[1] > self.MAX_ELEMENTS:
            raise ValueError(f"matmul(A, B) needs A (m, n) and B (n, p), got A {A.shape} and B {B.shape}")
        result = A @ B
        # a product of the chain's matrices (or of one and the identity) is one of them too
        counts = self._on_chain(A) and self._on_chain(B) and (
            _key(A) in self.allowed or _key(B) in self.allowed)
        if counts:
            self._keep(self.allowed, result)
        return self._done(counts, result, A.shape[0] * A.shape[1] * B.shape[1])

    def take_learner_tally(self):
        counted, self.learner_tally = self.learner_tally, 0
        return counted

    def came_from_products(self, answer) -> bool:
        """Whether ``answer`` is a product the grader returned, or (a Jacobian) stacks them."""
        if not isinstance(answer, np.ndarray) or answer.dtype.kind not in "fiu":
            return False
        answer = answer.astype(np.float64, copy=False)
        if _key(answer) in self.outputs or (answer.ndim == 2 and _key(answer.T) in self.outputs):
            return True  # a Jacobian may come out transposed (reverse mode as forward mode on A^T)
        if answer.ndim == 2:
            return all(_key(c) in self.outputs for c in answer.T) or \
                all(_key(r) in self.outputs for r in answer)
        return False


def _key(a: np.ndarray):
    """An exact, hashable fingerprint of a float64 array (-0.0 and 0.0 alike)."""
    a = np.ascontiguousarray(a, dtype=np.float64) + 0.0
    return a.shape, a.tobytes()
