"""A learner's answer is held to the reference's own before the grader computes with it (issue 43,
class 3).

Some of the grader's own work takes a value the learner's code returned: the upstream replay
(engine/upstream.py) builds the reference's downstream function on the learner's upstream one,
in the grader's process, so ``conv1d_output_length`` returning 10**9 made the reference's
``conv1d_forward`` allocate gigabytes here, outside every cap of the sandbox. So such a value is
admitted only in the form of the reference's own answer on the same inputs:

- an integer where the reference answers an integer (never a bool, a float or text), at most
  ``SCALE`` times the largest size the call can name (the reference's answer, every integer and
  array dimension among the call's inputs): a size the question's own shapes allow;
- a real number where the reference answers one; a bool where it answers a bool;
- an array of the reference answer's shape (numbers or bools; a 0-d array and a number stand
  for each other), a sequence of its length, a dict of its keys, each item held to the same
  rules; anything else only as the same type.

What fails is refused with a sentence (``NotAdmitted``), and the grader does not compute with it.
"""
from __future__ import annotations

import numpy as np

SCALE = 4
"""A learner's integer may be up to this many times the largest size the call names (a length
off by a factor, a padding counted twice) and still be replayed."""
_DEPTH = 8


class NotAdmitted(ValueError):
    """The learner's value is not of the reference answer's form; the message says how."""


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def largest_size(values, depth: int = 0) -> int:
    """The largest integer or array dimension in ``values`` (nested sequences and dicts)."""
    if depth > _DEPTH:
        return 0
    if isinstance(values, np.ndarray):
        return max(values.shape, default=0)
    if _is_int(values):
        return abs(int(values))
    if isinstance(values, dict):
        values = list(values.values())
    if isinstance(values, (list, tuple)):
        return max((largest_size(v, depth + 1) for v in values), default=0)
    return 0


def admit(got, want, inputs, depth: int = 0):
    """``got`` (the learner's answer) when it has the form of ``want`` (the reference's answer to
    the same call, whose inputs are ``inputs``); else ``NotAdmitted``."""
    if depth > _DEPTH:
        raise NotAdmitted("it is nested deeper than the reference's answer")
    if isinstance(want, np.ndarray) and want.ndim == 0 and want.dtype.kind in "biuf":
        return np.asarray(admit(_scalar(got), want[()], inputs, depth + 1))  # a 0-d array is a number
    got = _scalar(got)
    if isinstance(want, (bool, np.bool_)):
        if not isinstance(got, (bool, np.bool_)):
            raise NotAdmitted(f"it returned {_kind(got)} where the reference's returns True or False")
        return bool(got)
    if _is_int(want):
        if not _is_int(got):
            raise NotAdmitted(f"it returned {_kind(got)} where the reference's returns an integer")
        bound = SCALE * max(1, abs(int(want)), largest_size(inputs))
        if abs(int(got)) > bound:
            raise NotAdmitted(f"it returned {int(got)}, far outside the sizes of this call's inputs "
                              f"(the reference's answer is {int(want)})")
        return int(got)
    if _is_real(want):
        if not _is_real(got):
            raise NotAdmitted(f"it returned {_kind(got)} where the reference's returns a number")
        return float(got) if isinstance(want, float) else got
    if isinstance(want, np.ndarray):
        if not (isinstance(got, np.ndarray) and got.shape == want.shape and got.dtype.kind in "biufc"):
            raise NotAdmitted(f"it returned {_kind(got)} where the reference's returns an array of shape "
                              f"{want.shape}")
        return got
    if isinstance(want, (list, tuple)):
        if not (isinstance(got, (list, tuple)) and len(got) == len(want)):
            raise NotAdmitted(f"it returned {_kind(got)} where the reference's returns {len(want)} values")
        return type(want)(admit(g, w, inputs, depth + 1) for g, w in zip(got, want))
    if isinstance(want, dict):
        if not (isinstance(got, dict) and got.keys() == want.keys()):
            raise NotAdmitted(f"it returned {_kind(got)} where the reference's returns a dict of "
                              f"{', '.join(map(str, list(want)[:5]))}")
        return {k: admit(got[k], want[k], inputs, depth + 1) for k in want}
    if type(got) is not type(want):
        raise NotAdmitted(f"it returned {_kind(got)} where the reference's returns {_kind(want)}")
    return got


def _scalar(value):
    """A 0-d numeric array as the number it holds; anything else as it is."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf":
        return value[()]
    return value


def _kind(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    if isinstance(value, (bool, np.bool_)):
        return "a bool"
    if _is_int(value):
        return "an integer"
    if _is_real(value):
        return f"the number {float(value):g}"
    if isinstance(value, (list, tuple)):
        return f"{len(value)} values"
    return f"a {type(value).__name__}"
