"""Typed, range-checked fields of what the kit persists (grader/loading/persisted.py).

Everything the kit writes to disk and reads back (the learner's history, its review cards,
the mock interview's state, a batch's results) passes through these on load: a field that
is not what the kit would have written raises ``Invalid`` with the reason in a few words, and
the record that holds it is set aside by its schema. Each checker returns the value as the
kit uses it (a float, an int, a timezone-aware datetime), so nothing downstream converts
unchecked text or meets a number it cannot compute with. Standard library only.
"""
from __future__ import annotations

import datetime as dt
import functools
import math

YEARS = (2000, 2200)
"""A date outside these years is no date the kit wrote (and year 9999 at -12:00 overflows)."""
_EARLIEST = dt.datetime(YEARS[0], 1, 2, tzinfo=dt.timezone.utc)
_LATEST = dt.datetime(YEARS[1], 12, 30, tzinfo=dt.timezone.utc)


class Invalid(ValueError):
    """A field is not what the kit writes; ``str()`` says which and why, in a few words."""


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


def number(value, name: str, lo: float, hi: float) -> float:
    """A finite real number (not a bool, not text) in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid(f"{name} is not a number ({_shown(value)})")
    if isinstance(value, int) and not lo <= value <= hi:  # before float(): 10**400 would overflow
        raise Invalid(f"{name} {_shown(value)} is outside {lo:g}..{hi:g}")
    value = float(value)
    if not math.isfinite(value) or not lo <= value <= hi:
        raise Invalid(f"{name} {_shown(value)} is outside {lo:g}..{hi:g}")
    return value


def count(value, name: str, hi: int, lo: int = 0) -> int:
    """A whole number (not a bool, not a float) in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(f"{name} is not a whole number ({_shown(value)})")
    if not lo <= value <= hi:
        raise Invalid(f"{name} {_shown(value)} is outside {lo}..{hi}")
    return value


def text(value, name: str, max_chars: int, cut: bool = False) -> str:
    """A string of at most ``max_chars`` characters (``cut``: longer ones are shortened)."""
    if not isinstance(value, str):
        raise Invalid(f"{name} is not text ({_shown(value)})")
    if len(value) > max_chars:
        if not cut:
            raise Invalid(f"{name} is longer than {max_chars} characters")
        value = value[:max_chars]
    return value


def flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"{name} is not true or false ({_shown(value)})")
    return value


def choice(value, name: str, options):
    """One of ``options`` (compared by type too: ``True`` is not ``1``)."""
    if not any(type(value) is type(o) and value == o for o in options):
        raise Invalid(f"{name} {_shown(value)} is none of {', '.join(map(str, options))}")
    return value


def moment(value, name: str) -> dt.datetime:
    """An ISO date and time with its offset (a time without a zone is ambiguous, and mixing
    one with aware times raises), between the years ``YEARS``."""
    if not isinstance(value, str) or len(value) > 40:
        raise Invalid(f"{name} is not an ISO date and time ({_shown(value)})")
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise Invalid(f"{name} is not an ISO date and time ({_shown(value)})") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise Invalid(f"{name} {_shown(value)} has no time zone")
    if not YEARS[0] <= parsed.year <= YEARS[1] or not _EARLIEST <= parsed <= _LATEST:
        raise Invalid(f"{name} {_shown(value)} is outside the years {YEARS[0]}..{YEARS[1]}")
    return parsed


def day(value, name: str) -> str:
    """An ISO date (``2026-11-27``) between the years ``YEARS``, as ``YYYY-MM-DD``."""
    if not isinstance(value, str) or len(value) != 10:
        raise Invalid(f"{name} is not an ISO date ({_shown(value)})")
    found = _day(value)
    if found is None:
        raise Invalid(f"{name} is not an ISO date between the years {YEARS[0]} and {YEARS[1]} ({_shown(value)})")
    return found


@functools.lru_cache(maxsize=4096)
def _day(value: str) -> str | None:
    """``value`` as ``YYYY-MM-DD``, or None (cached: a history repeats its days)."""
    try:
        parsed = dt.date.fromisoformat(value)
    except ValueError:
        return None
    return parsed.isoformat() if YEARS[0] <= parsed.year <= YEARS[1] else None


def mapping(value, name: str) -> dict:
    if not isinstance(value, dict):
        raise Invalid(f"{name} is not an object ({_shown(value)})")
    return value


def latest(value, name: str, max_items: int) -> list:
    """A list, cut to its last ``max_items`` items before anything reads them (a fixed cap on
    the records a load ever looks at; the newest are kept)."""
    if not isinstance(value, list):
        raise Invalid(f"{name} is not a list ({_shown(value)})")
    return value[-max_items:] if max_items else []


def first_items(value, name: str, max_items: int) -> list:
    """The first ``max_items`` ``(key, value)`` pairs of an object (a fixed cap, as ``latest``)."""
    found = []
    for pair in mapping(value, name).items():
        if len(found) >= max_items:
            break
        found.append(pair)
    return found
