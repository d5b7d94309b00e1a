"""What an answer's dtype says, against the contract's dtype for that output (issue 38).

The contract's arrays are float64 unless a question declares otherwise (``Question.dtypes``:
``mixed_precision_step``'s master copy is float32). ``low_precision`` is the diagnosis for an
answer narrower than its contract's dtype; ``precision_note`` the plain fact for an answer in
its contract's own narrow dtype whose values are off by more than that dtype's rounding.
Neither names a trap.
"""
from __future__ import annotations

import numpy as np

ATOL = 1e-8


def low_precision(name: str, got, fn: str, expected=None, wants: str = "float64") -> str | None:
    """The sentence for an answer in a float dtype narrower than the contract's (``wants``,
    float64 unless the question declares another, ``Question.dtypes``), None for any other
    answer: the dtype is the mistake to report, not a trap its values may resemble, and with
    ``expected`` it says whether the values are right to that precision."""
    try:
        wanted = np.dtype(wants)
    except TypeError:
        return None
    if (not isinstance(got, np.ndarray) or got.dtype.kind != "f" or wanted.kind != "f"
            or got.dtype.itemsize >= wanted.itemsize):
        return None
    text = f"`{name}` from {fn} is {got.dtype} where the contract wants {wanted}"
    if expected is None or np.shape(expected) != got.shape:
        return text + "."
    with np.errstate(all="ignore"):
        wide = got.astype(np.float64)
        close = bool(np.all(np.isfinite(wide)) and np.allclose(
            wide, expected, rtol=float(np.finfo(got.dtype).eps) ** 0.5, atol=ATOL))
    return text + (f": its values are right to {got.dtype}'s precision, but that precision is not "
                   "enough here." if close else f", and its values are wrong even at {got.dtype}'s precision.")


def precision_note(name: str, got, fn: str, expected) -> str | None:
    """For an answer in the contract's own narrow dtype (float32, float16) whose values are off
    by more than its rounding: how far, in that dtype's terms. None otherwise. A fact, not a
    diagnosis: it names no trap and blames no dtype."""
    if (not isinstance(got, np.ndarray) or got.dtype.kind != "f" or got.dtype.itemsize >= 8
            or np.shape(expected) != got.shape):
        return None
    with np.errstate(all="ignore"):
        wide, want = got.astype(np.float64), np.asarray(expected, dtype=np.float64)
        if not (np.all(np.isfinite(wide)) and np.all(np.isfinite(want))):
            return None
        eps = float(np.finfo(got.dtype).eps)
        worst = float(np.max(np.abs(wide - want) / np.maximum(np.abs(want), ATOL), initial=0.0))
    if worst <= eps:
        return None
    return (f"`{name}` is {got.dtype}, as the contract says; its values differ from the reference's "
            f"by up to {worst:.1e} (relative), {worst / eps:.0f} times {got.dtype}'s rounding unit "
            f"({eps:.1e}): more than rounding the result once explains.")
