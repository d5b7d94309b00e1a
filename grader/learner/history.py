"""The learner's local history: scores, hints seen, derivation steps revealed, interviews.

It lives in ``.backprop_traps_history.json`` in the folder where ``grade`` runs, so each
practice folder keeps its own progress. It is a convenience, never a source of errors:
a missing or unreadable file reads as an empty history, and a folder that cannot be written
to simply keeps none. A file that is there but broken (not JSON, not a history) is not
replaced silently: it is renamed to ``<name>.broken`` (``.broken-2``, ... if taken) and a
sentence on stderr says so, once, since the next run finds no broken file. It is read the
one bounded way (grader/loading/bounded.py: no link followed, no FIFO waited on, a size and
depth cap), so nothing with its name can hang or crash ``grade``; something with its name that
is not a regular file (a link, a FIFO, a folder) is left where it is, and that run records
nothing. Writes go to a
temporary file first and are then renamed over the old one, so an interrupted write cannot
leave half a file behind.

Format (version 1)::

    {"version": 1, "questions": {"routing_trap": {
        "best": 10.0, "last": 8.0, "max_score": 12.0, "attempts": 3,
        "graded_sha256": "<hash of the last file graded: re-grading it is not an attempt>",
        "hints_seen": {"overlapping windows accumulate (k=3, s=2 and k=3, s=1)": 2},
        "revealed": 2,
        "interviews": [{"date": "2026-11-24", "hit": 4, "of": 6}]}},
     "review": {...}, "mocks": [...]}

Other top-level sections (``review``: the spaced-review scheduler's cards, grader/learner/review.py;
``mocks``: the mock interviews, grader/learner/mock.py) are kept as they are read and written
back; each section's own module checks and upgrades its contents.
"""
from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path

from backprop_traps.grader.loading import bounded

FILENAME = ".backprop_traps_history.json"
VERSION = 1
MAX_BYTES = 4 * 1024 * 1024
"""A history bigger than this is broken (a year of daily practice on every question is ~100 KB)."""
MAX_DEPTH = 32
"""A history nests about 5 deep; past 32 it is broken (refused before ``json.loads`` could recurse)."""


def _number(value) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _clean_interview(raw) -> dict | None:
    """One rehearsal ``{"date", "hit", "of"}``, or None when it is malformed."""
    if not isinstance(raw, dict) or not isinstance(raw.get("date"), str):
        return None
    hit, of = raw.get("hit"), raw.get("of")
    if not (_count(hit) and _count(of) and hit <= of):
        return None
    return {"date": raw["date"][:32], "hit": hit, "of": of}


def _clean_entry(raw) -> dict:
    """Keep only well-formed fields of one question's entry; drop the rest."""
    entry: dict = {}
    if not isinstance(raw, dict):
        return entry
    for key in ("best", "last", "max_score"):
        if _number(raw.get(key)) is not None:
            entry[key] = _number(raw[key])
    for key in ("attempts", "revealed"):
        if _count(raw.get(key)):
            entry[key] = raw[key]
    if isinstance(raw.get("graded_sha256"), str):
        entry["graded_sha256"] = raw["graded_sha256"][:64]
    if isinstance(raw.get("interviews"), list):
        entry["interviews"] = [i for i in map(_clean_interview, raw["interviews"]) if i]
    seen = raw.get("hints_seen")
    if isinstance(seen, dict):
        entry["hints_seen"] = {str(k): v for k, v in seen.items()
                               if isinstance(v, int) and not isinstance(v, bool) and v >= 0}
    return entry


class History:
    """The history of one folder. ``load`` never raises; ``save`` returns whether it wrote."""

    def __init__(self, path: Path, questions: dict | None = None, sections: dict | None = None):
        self.path = Path(path)
        self.questions: dict[str, dict] = questions or {}
        self.sections: dict = sections or {}
        """Top-level sections other than ``version`` and ``questions``, as read (their modules
        clean them)."""
        self.writable = True
        """False when a broken file could not be moved aside: it is then never overwritten."""

    @classmethod
    def load(cls, folder: str | os.PathLike | None = None) -> "History":
        path = Path(folder or os.getcwd()) / FILENAME
        try:  # the one bounded way (loading/bounded.py): never hangs, never follows a link
            raw = bounded.read_json(path, MAX_BYTES, max_depth=MAX_DEPTH)
        except bounded.Unreadable as e:
            if e.missing:  # nothing to keep
                return cls(path)
            if not e.regular:  # a link, FIFO, device or folder: left where it is, never renamed
                return cls._not_a_file(path, e)
            raw = None
        qs = raw.get("questions") if isinstance(raw, dict) else None
        if not isinstance(qs, dict):
            return cls._broken(path)
        sections = {k: v for k, v in raw.items() if k not in ("version", "questions")}
        return cls(path, {str(q): _clean_entry(e) for q, e in qs.items()}, sections)

    @classmethod
    def _not_a_file(cls, path: Path, why: Exception) -> "History":
        """Something that is not a regular file has the history's name: it is not read, not
        moved (renaming a link or a FIFO over a backup helps nobody) and not replaced; this run
        records nothing, and says so each time until it is gone."""
        history = cls(path)
        history.writable = False
        print(f"{why}: it is not read as a history, and this run records nothing "
              f"(remove it, or replace it with the history file itself).", file=sys.stderr)
        return history

    @classmethod
    def _broken(cls, path: Path) -> "History":
        """An empty history, the broken file renamed aside, and one sentence on stderr."""
        history = cls(path)
        for n in range(1, 100):
            backup = path.with_name(path.name + (".broken" if n == 1 else f".broken-{n}"))
            if os.path.lexists(backup):  # a dangling link is taken too: never renamed over
                continue
            try:
                os.replace(path, backup)
            except OSError:
                break
            print(f"{path.name} was not a readable history; it is kept as {backup.name} "
                  "and a new history starts.", file=sys.stderr)
            return history
        history.writable = False
        print(f"{path.name} is not a readable history and could not be moved aside; "
              "it is left as it is and this run records nothing.", file=sys.stderr)
        return history

    def save(self) -> bool:
        """Write atomically; a folder we cannot write to keeps no history (no error)."""
        if not self.writable:
            return False
        text = json.dumps({**self.sections, "version": VERSION, "questions": self.questions},
                          indent=1, sort_keys=True)
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=FILENAME + ".", suffix=".tmp", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text + "\n")
            os.chmod(tmp, 0o644)  # mkstemp makes it private; it holds nothing secret
            os.replace(tmp, self.path)
            return True
        except OSError:
            if tmp:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            return False

    # -- scores -----------------------------------------------------------------------
    def record_score(self, question: str, score: float, max_score: float,
                     fingerprint: str | None = None) -> None:
        """Remember a grading. It counts as an attempt unless the file is the one graded last
        time (``fingerprint``, a hash of its bytes): a ``--hint`` re-run or a ``--seed`` replay
        of the same file is not a new attempt."""
        entry = self.questions.setdefault(question, {})
        best = entry.get("best")
        entry["best"] = float(score) if best is None else max(best, float(score))
        entry["last"] = float(score)
        entry["max_score"] = float(max_score)
        if fingerprint is None or entry.get("graded_sha256") != fingerprint:
            entry["attempts"] = entry.get("attempts", 0) + 1
        if fingerprint is not None:
            entry["graded_sha256"] = fingerprint

    def last(self, question: str) -> tuple[float, float] | None:
        """``(last score, max score)`` if this question was graded here."""
        entry = self.questions.get(question, {})
        if "best" not in entry:
            return None
        return entry.get("last", entry["best"]), entry.get("max_score", float("nan"))

    def best(self, question: str) -> tuple[float, float] | None:
        """``(best score, max score)`` if this question was graded here."""
        entry = self.questions.get(question, {})
        if "best" not in entry:
            return None
        return entry["best"], entry.get("max_score", float("nan"))

    # -- hints ------------------------------------------------------------------------
    def hints_seen(self, question: str, check: str) -> int:
        return self.questions.get(question, {}).get("hints_seen", {}).get(check, 0)

    def next_hint(self, question: str, check: str, hints: tuple[str, ...]) -> tuple[int, str] | None:
        """The next unseen hint ``(number from 1, text)``, marked as seen; None when all are seen."""
        seen = self.hints_seen(question, check)
        if seen >= len(hints):
            return None
        entry = self.questions.setdefault(question, {})
        entry.setdefault("hints_seen", {})[check] = seen + 1
        return seen + 1, hints[seen]

    # -- the spoken part and the derivation ----------------------------------------
    def revealed(self, question: str) -> int:
        """How many steps of the derivation ``grade reveal`` has shown."""
        return self.questions.get(question, {}).get("revealed", 0)

    def record_interview(self, question: str, hit: int, of: int, date: str) -> None:
        """Remember one rehearsal's checklist score (``date`` is an ISO date)."""
        entry = self.questions.setdefault(question, {})
        entry.setdefault("interviews", []).append({"date": date, "hit": int(hit), "of": int(of)})

    def interviews(self, question: str) -> list[dict]:
        """Every rehearsal of ``question``, oldest first."""
        return self.questions.get(question, {}).get("interviews", [])

    def record_revealed(self, question: str, steps: int) -> None:
        entry = self.questions.setdefault(question, {})
        entry["revealed"] = max(entry.get("revealed", 0), int(steps))
