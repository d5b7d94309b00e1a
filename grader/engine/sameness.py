"""When an answer is the reference's: the tolerances and the item-by-item comparisons every
check relies on (``CheckContext`` re-exports them, where checks have always imported them).

One rule for NaN and infinity, in every comparison here (``same_values``): an entry is the
same where the wanted value is NaN and the answer's is NaN too, where both are the same
infinity, and where both are finite and close (``rtol``, ``atol``; -0.0 and 0.0 are equal). A
NaN or an infinity where the wanted value is finite is different, and so is a finite value
where it is not. So a reference (or a trap's wrong form) that holds NaN, a variance over N - 1
= 0 say, is matched by an answer with NaN in the same places, and an answer that turns a
finite entry into NaN never passes for it.

- ``same_answer(got, expected)``: the answer is the reference's (nested tuples and lists,
  numbers, arrays; integer arrays exactly).
- ``same_as(got, candidates)``: which known-wrong form (a trap's) an array answer is, if any.
- ``unchanged(before, after)``: an argument came back from a call as it was sent (exactly:
  no tolerance).
"""
from __future__ import annotations

import numpy as np

ATOL = 1e-8
RTOL = 1e-6


def _fmt(arr) -> str:
    return np.array2string(np.asarray(arr), precision=3, suppress_small=True, threshold=40,
                           max_line_width=100)


def same_values(got, want, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether the numeric array ``got`` holds ``want``'s values: the same shape, and entry by
    entry the one rule of this module (NaN where ``want`` has NaN, the same infinity where it
    has one, close where it is finite). Integers, booleans and floats of any width compare by
    value (as float64); a complex, string or object array is never the same. Never raises."""
    try:
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape or got.dtype.kind not in "fiub" or want.dtype.kind not in "fiub":
            return False
        return bool(np.allclose(got.astype(np.float64), want.astype(np.float64),
                                rtol=rtol, atol=atol, equal_nan=True))
    except Exception:  # noqa: BLE001 (values that cannot even be compared are not the same)
        return False


def same_as(got, candidates: dict, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """The first trap (in ``candidates``' order: {trap: [its wrong forms]}) one of whose forms
    the array ``got`` is (``same_values``: same shape, NaN where the form has NaN), else None.
    A form of None (a trap that has no form on this input) is skipped; an answer that is not
    a numeric array is no trap's."""
    if not isinstance(got, np.ndarray) or got.dtype.kind not in "fiu":
        return None
    for trap, forms in candidates.items():
        for form in forms:
            if form is not None and same_values(got, form, rtol, atol):
                return trap
    return None


def same_answer(got, expected, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether ``got`` is ``expected`` (the reference's answer), item by item: arrays of the same
    shape and close values (integers equal), numbers close (a 0-d or size-1 array counts as a
    number), tuples and lists of the same length (either kind), None only for None. NaN and
    infinity only where the reference has them (the module's rule). Never raises: an answer of
    an odd kind is simply not the same."""
    try:
        if isinstance(expected, (tuple, list)):
            return (isinstance(got, (tuple, list)) and len(got) == len(expected)
                    and all(same_answer(g, e, rtol, atol) for g, e in zip(got, expected)))
        if expected is None:
            return got is None
        if isinstance(expected, (str, bytes)):
            return got == expected
        if isinstance(expected, np.ndarray) and expected.ndim > 0:
            if not isinstance(got, np.ndarray) or got.shape != expected.shape or got.dtype.kind not in "fiub":
                return False
            if expected.dtype.kind in "iub":
                return bool(np.array_equal(got, expected))
            return same_values(got, expected, rtol, atol)
        # a number: a Python number, or a 0-d / size-1 numeric array
        if isinstance(got, bool) or not isinstance(got, (int, float, np.number, np.ndarray)):
            return False
        value = np.asarray(got)
        if value.size != 1 or value.dtype.kind not in "fiu":
            return False
        return same_values(value.reshape(()), np.float64(expected), rtol, atol)
    except Exception:  # noqa: BLE001 (an answer that cannot even be compared is not right)
        return False


def unchanged(before, after) -> bool:
    """Whether an argument came back as it was sent: arrays of the same shape whose values are
    exactly equal (NaN where it was NaN, by the module's rule with no tolerance; -0.0 and 0.0
    are equal), equal nested lists and tuples (a list reordered or extended in place is
    changed), dicts with the same keys and unchanged values, equal rest. Never raises."""
    try:
        if isinstance(before, dict):
            return isinstance(after, dict) and before.keys() == after.keys() and all(
                unchanged(before[k], after[k]) for k in before)
        if isinstance(before, np.ndarray):
            if not (isinstance(after, np.ndarray) and after.shape == before.shape):
                return False
            if before.dtype.kind == "f":
                return same_values(after, before, rtol=0.0, atol=0.0)
            return bool(np.array_equal(after, before))  # integers exactly, past float64's 2**53
        if isinstance(before, (list, tuple)):
            return isinstance(after, (list, tuple)) and len(after) == len(before) and all(
                unchanged(b, a) for b, a in zip(before, after))
        if isinstance(before, float) and isinstance(after, float) and before != before:
            return after != after  # a NaN sent back as NaN
        return bool(before == after)
    except Exception:  # noqa: BLE001 (what cannot even be compared did not come back the same)
        return False
