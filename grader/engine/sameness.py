"""When an answer is the reference's: the tolerances and the item-by-item comparisons every
check relies on (``CheckContext`` re-exports them, where checks have always imported them)."""
from __future__ import annotations

import numpy as np

ATOL = 1e-8
RTOL = 1e-6


def _fmt(arr) -> str:
    return np.array2string(np.asarray(arr), precision=3, suppress_small=True, threshold=40,
                           max_line_width=100)


def same_answer(got, expected, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether ``got`` is ``expected`` (the reference's answer), item by item: arrays of the same
    shape and close values (integers equal), numbers close (a 0-d or size-1 array counts as a
    number), tuples and lists of the same length (either kind), None only for None. NaN is
    never right. Never raises: an answer of an odd kind is simply not the same."""
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
            return bool(np.all(np.isfinite(got)) and np.allclose(got.astype(np.float64), expected,
                                                                  rtol=rtol, atol=atol))
        # a number: a Python number, or a 0-d / size-1 numeric array
        if isinstance(got, bool) or not isinstance(got, (int, float, np.number, np.ndarray)):
            return False
        value = np.asarray(got)
        if value.size != 1 or value.dtype.kind not in "fiu":
            return False
        value = float(value.reshape(-1)[0])
        return bool(np.isfinite(value) and np.isclose(value, float(expected), rtol=rtol, atol=atol))
    except Exception:  # noqa: BLE001 (an answer that cannot even be compared is not right)
        return False


def unchanged(before, after) -> bool:
    """Whether an argument came back as it was sent: equal arrays (shape and values), equal
    nested lists and tuples (a list reordered or extended in place is changed), dicts with the
    same keys and unchanged values, equal rest."""
    if isinstance(before, dict):
        return isinstance(after, dict) and before.keys() == after.keys() and all(
            unchanged(before[k], after[k]) for k in before)
    if isinstance(before, np.ndarray):
        return (isinstance(after, np.ndarray) and after.shape == before.shape
                and bool(np.array_equal(after, before, equal_nan=before.dtype.kind == "f")))
    if isinstance(before, (list, tuple)):
        return isinstance(after, (list, tuple)) and len(after) == len(before) and all(
            unchanged(b, a) for b, a in zip(before, after))
    try:
        return bool(before == after)
    except Exception:  # noqa: BLE001
        return False
