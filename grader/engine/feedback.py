"""Feedback worth reading: the smallest failing example, and where the differences lie.

Two helpers the checks reach through ``CheckContext``:

- ``smallest_failure`` re-runs the learner's function on inputs from a check's own builder,
  smallest size first, and shows the first one where the answer is still wrong: the input,
  the expected value, the learner's, and the positions that differ. A 5 x 5 plane a learner
  can work through by hand beats "37 of 1152 entries differ".
- ``where_differs`` takes named boolean masks of interesting positions (e.g. "where windows
  overlap") and says so when every difference falls inside one of them.

Both only describe; they never decide a check's outcome.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from backprop_traps.grader.engine.search_budget import (  # noqa: F401 (named here too)
    SECONDS, SHARE, SearchBudget, allowance)

RTOL = 1e-6
ATOL = 1e-8
MAX_POSITIONS = 8
_STOP_KINDS = ("timeout", "crash", "budget")  # do not pay for a broken function twice


def differing(got, expected, rtol: float = RTOL, atol: float = ATOL) -> np.ndarray | None:
    """Boolean mask of the entries that differ, or None when the shapes do not even match."""
    try:
        got, expected = np.asarray(got), np.asarray(expected)
    except Exception:  # a ragged or odd value: nothing to compare position by position
        return None
    if got.shape != expected.shape or got.dtype.kind not in "biuf":
        return None
    if got.dtype.kind in "iub" and expected.dtype.kind in "iub":
        return got != expected
    return ~np.isclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


def where_differs(name: str, got, expected, regions: dict[str, np.ndarray],
                  rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """"`dx` differs only where windows overlap (...)" when every difference lies in one region.

    ``regions`` maps a phrase ("where windows overlap", "at tied maxima") to a boolean mask
    of ``expected``'s shape; the first region (in order) holding every difference is named,
    so put the most specific first. None when no region explains the differences."""
    wrong = differing(got, expected, rtol, atol)
    if wrong is None or not wrong.any():
        return None
    count = int(wrong.sum())
    for phrase, mask in regions.items():
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != wrong.shape or mask.all():
            continue  # a region covering everything says nothing
        if not wrong[~mask].any():
            return (f"`{name}` differs only {phrase} ({count} of {wrong.size} entries); "
                    "everywhere else it is right.")
    return None


def uniform_factor(got, expected, rtol: float = RTOL, atol: float = ATOL) -> float | None:
    """The number c with ``got == c * expected`` (to tolerance), when there is one other than 1.

    None when the shapes differ, ``expected`` is all zeros, or no single factor explains
    ``got``. A factor tells a learner what is wrong far better than "37 entries differ":
    a summed loss is N times the mean, a forgotten 1 / (k * k) makes dx k * k times too large."""
    wrong = differing(got, expected, rtol, atol)
    if wrong is None or not wrong.any():
        return None
    g = np.asarray(got, dtype=np.float64).ravel()
    e = np.asarray(expected, dtype=np.float64).ravel()
    norm = float(e @ e)
    if norm == 0.0 or not np.all(np.isfinite(g)):
        return None
    c = float(g @ e) / norm
    if abs(c) < 1e-12 or not np.allclose(g, c * e, rtol=rtol, atol=atol):
        return None
    return c


def _nice(c: float) -> str:
    """3 for 2.9999999, 1/8 for 0.1250000001, else three significant digits."""
    whole = round(c)
    if whole and abs(c - whole) <= 1e-6 * abs(c):
        return f"{whole:g}"
    inverse = round(1 / c)
    if inverse and abs(1 / c - inverse) <= 1e-6 * abs(1 / c):
        return f"1/{inverse:g}"
    return f"{c:.3g}"


def describe_factor(name: str, got, expected, counts: dict[str, float] | None = None) -> str | None:
    """A sentence such as "`dlogits` is 8 times the right value (8 = N, the batch size)." when
    ``got`` is a uniform multiple of ``expected``; ``counts`` names sizes a factor may be
    (``{"N, the batch size": 8}``), so the sentence can say which one. None otherwise."""
    c = uniform_factor(got, expected)
    if c is None:
        return None
    known = [n for n in (counts or {}).values() if n not in (0, 1)]
    whole = round(abs(c)) != 0 and abs(abs(c) - round(abs(c))) <= 1e-6 * abs(c)
    inverse = abs(1 / c - round(1 / c)) <= 1e-6 * abs(1 / c)
    if np.size(expected) == 1 and not (whole or inverse or any(
            abs(abs(c) - n) <= 1e-6 * n or abs(abs(c) * n - 1) <= 1e-6 for n in known)):
        return None  # one number is always some multiple of another: say so only when it is telling
    if abs(c + 1) <= 1e-6:
        return f"`{name}` has the wrong sign: it is minus the right value."
    sign = "minus " if c < 0 else ""
    size = abs(c)
    why = ""
    for label, n in (counts or {}).items():
        if n not in (0, 1) and (abs(size - n) <= 1e-6 * n or abs(size * n - 1) <= 1e-6):
            why = f" ({_nice(n)} = {label})"
            break
    if size > 1:
        return f"`{name}` is {sign}{_nice(size)} times the right value{why}."
    return f"`{name}` is {sign}{_nice(size)} of the right value, {_nice(1 / size)} times too small{why}."


DEFAULT_AXES = {1: ("entry",), 2: ("row", "column")}
MAX_LISTED = 6


def _axis_names(ndim: int, axes) -> tuple:
    if axes and len(axes) == ndim:
        return tuple(axes)
    return DEFAULT_AXES.get(ndim, tuple(f"axis {k}" for k in range(ndim)))


def _at(name: str, index) -> str:
    """"step t = 0" for an axis named by a variable, "row 0" otherwise."""
    last = name.split()[-1]
    return f"{name} = {index}" if len(last) == 1 or name.startswith("axis") else f"{name} {index}"


def _plural(name: str) -> str:
    """"entries", "batches", "rows": English plurals of the axis names questions use."""
    if name.endswith("y") and name[-2:-1] not in "aeiou":
        return name[:-1] + "ies"
    return name + ("es" if name.endswith(("s", "x", "ch", "sh")) else "s")


def _listed(indices) -> str:
    shown = [str(int(i)) for i in indices[:MAX_LISTED]]
    text = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
    return text if len(indices) <= MAX_LISTED else ", ".join(shown) + f" and {len(indices) - MAX_LISTED} more"


def locate(name: str, got, expected, axes=None, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """Where ``got`` differs from ``expected`` and by how much, in the learner's terms: how many
    entries, along which axis the differences are confined ("only in row 0", "only where step
    t = 0"), and the largest difference with both values. ``axes`` names the axes (e.g.
    ``("step t", "row n", "feature")``; default row and column). None when nothing differs or the
    shapes do not match (a shape error says that itself)."""
    wrong = differing(got, expected, rtol, atol)
    if wrong is None or not wrong.any():
        return None
    g = np.asarray(got, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    count, size = int(wrong.sum()), wrong.size
    if g.ndim == 0 or size == 1:
        mine, want = g.reshape(-1)[0] + 0.0, e.reshape(-1)[0] + 0.0  # + 0.0: -0 reads as 0
        return (f"`{name}` is {mine:.6g}, expected {want:.6g}: off by {mine - want:+.3g}"
                + (f" ({share(abs(mine - want) / abs(want))} the expected value)." if want and np.isfinite(mine)
                   else "."))
    names = _axis_names(g.ndim, axes)
    confined = []
    for k in range(g.ndim):
        if wrong.shape[k] <= 1:
            continue
        others = tuple(j for j in range(g.ndim) if j != k)
        hit = np.flatnonzero(wrong.any(axis=others) if others else wrong)
        if len(hit) < wrong.shape[k]:
            label = names[k] if len(hit) == 1 or names[k].startswith("axis") or len(names[k].split()[-1]) == 1 \
                else _plural(names[k])
            confined.append(f"{_at(label, _listed(hit))} (of 0 to {wrong.shape[k] - 1})")
    with np.errstate(all="ignore"):
        diff = np.where(wrong, np.abs(g - e), -1.0)
        diff = np.where(np.isnan(diff), np.inf, diff)
    at = np.unravel_index(int(np.argmax(diff)), wrong.shape)
    where = ", ".join(str(int(i)) for i in at)
    labels = ", ".join(_at(n, int(i)) for n, i in zip(names, at))
    mine, want = g[at] + 0.0, e[at] + 0.0  # + 0.0: -0 reads as 0
    scale = float(np.max(np.abs(e[np.isfinite(e)]), initial=0.0))
    off = mine - want
    size_of = f" ({share(abs(off) / scale)} the largest expected entry)" if np.isfinite(off) and scale > 0 else ""
    if count == size:
        text = f"`{name}` differs at all {size} entries"
    elif confined:
        text = f"`{name}` differs at {count} of {size} entries, only in " + " and ".join(confined)
    else:
        text = f"`{name}` differs at {count} of {size} entries, spread over every " + " and every ".join(
            n for n, d in zip(names, wrong.shape) if d > 1)
    return (text + f". The largest difference is at [{where}] ({labels}): expected {want:.6g}, yours "
            f"{mine:.6g}, off by {off:+.3g}{size_of}.")


def share(ratio: float) -> str:
    """A relative difference in words that read as one: "53% of", "100% of", "2.5 times",
    "0.04% of" (never "1 of" or "1.2e+02 of")."""
    percent = ratio * 100
    if ratio >= 2:
        return f"{ratio:.2g} times" if ratio < 100 else f"{ratio:,.0f} times"
    if percent >= 10:
        return f"{percent:.0f}% of"
    if percent >= 0.01:
        return f"{percent:.2g}% of"
    return "under 0.01% of"


def differs_only_in(got, expected, mask, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """True when ``got`` differs from ``expected`` somewhere, and only inside ``mask``: a
    mistake recognised by where it shows (e.g. only where windows overlap), whatever form
    the code took."""
    wrong = differing(got, expected, rtol, atol)
    mask = np.asarray(mask, dtype=bool)
    if wrong is None or mask.shape != wrong.shape or not wrong.any():
        return False
    return not wrong[~mask].any()


def _squeeze(value):
    """Drop leading length-1 axes of arrays with more than two, and say which were dropped."""
    if not isinstance(value, np.ndarray) or value.ndim <= 2:
        return "", value
    lead = value.shape[:-2]
    if any(n != 1 for n in lead):
        return "", value
    return "[" + ", ".join("0" for _ in lead) + "]", value.reshape(value.shape[-2:])


def _fmt(value) -> str:
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=3, suppress_small=True, threshold=200, max_line_width=90)
    return repr(value)


def _show(label: str, value) -> list[str]:
    suffix, value = _squeeze(value)
    text = _fmt(value)
    if "\n" not in text:
        return [f"  {label}{suffix} = {text}"]
    return [f"  {label}{suffix} ="] + ["    " + line for line in text.splitlines()]


def format_example(inputs: dict, expected, got, name: str = "the answer", error: str = "") -> str:
    """The example as text: inputs, expected, the learner's, the positions that differ."""
    lines = ["The smallest input where yours is still wrong:"]
    for key, value in inputs.items():
        lines += _show(key, value)
    lines += _show(f"expected {name}", expected)
    if error:
        lines.append(f"  yours: {error}")
        return "\n".join(lines)
    lines += _show(f"yours    {name}", got)
    wrong = differing(got, expected)
    if wrong is not None and wrong.any():
        _, frame = _squeeze(wrong)
        where = [tuple(int(i) for i in idx) for idx in np.argwhere(frame)]
        more = f" and {len(where) - MAX_POSITIONS} more" if len(where) > MAX_POSITIONS else ""
        lines.append("  they differ at " + ", ".join(map(str, where[:MAX_POSITIONS])) + more)
    return "\n".join(lines)


def smallest_failure(sandbox, rng: np.random.Generator, fn: str, build: Callable, sizes,
                     expected: Callable, pick: Callable | None = None, name: str = "the answer",
                     tries: int = 3, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """Re-run the learner's ``fn`` on small inputs, smallest size first; describe the first failure.

    - ``build(rng, size)`` returns the positional arguments of ``fn`` as a dict (name -> value,
      in order), or ``(args, shown)`` where ``shown`` is what to print instead (e.g. the
      forward's ``x`` next to a backward's arguments).
    - ``expected(*args)`` is what ``fn`` should return (after ``pick``), from the reference.
    - ``pick(value)`` takes the part of the learner's answer to compare (default: all of it).

    Each size is tried ``tries`` times (a mistake may need a lucky input to show). A wrong
    value is shown in preference to an exception (the check failed on a value, so a value
    illustrates it best). Returns None when every small input passes, or when a call times
    out or crashes (we do not pay for a broken function twice)."""
    with SearchBudget(sandbox) as budget:  # inside the submission's budget, and charged to it
        return _smallest_failure(sandbox, rng, fn, build, sizes, expected, pick, name, tries, rtol, atol, budget)


def _smallest_failure(sandbox, rng, fn, build, sizes, expected, pick, name, tries, rtol, atol, budget):
    raised = None
    for size in sizes:
        for _ in range(tries):
            if budget.over():
                return raised
            built = build(rng, size)
            args, shown = built if isinstance(built, tuple) else (built, built)
            want = expected(*args.values())
            result = sandbox.call(fn, *args.values())
            if not result.ok:
                if result.kind in _STOP_KINDS:
                    return None
                raised = raised or format_example(shown, want, None, name, error=result.error)
                continue
            try:
                got = pick(result.value) if pick else result.value
            except Exception:  # the answer's structure is wrong: the main feedback says how
                return None
            wrong = differing(got, want, rtol, atol)
            if wrong is None:
                return None
            if wrong.any():
                return format_example(shown, want, got, name)
    return raised


LOCATE_LIMIT = 4096
"""A failing gradient of at most this many entries is compared entry by entry with full
finite differences, to say where it differs (a larger one only when the check gives the
reference's gradient)."""


def located(fail: Fail, where: str | None) -> Fail:
    """``fail`` marked with the sentence that says where the values differ (a failure without a
    trap then gets hints that start from it: ``trap_feedback.from_difference``)."""
    fail.located = where
    return fail
