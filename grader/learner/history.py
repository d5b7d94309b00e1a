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
``mock`` and ``mocks``: the running mock and the mock summaries, grader/learner/mock.py) are
written back as they are read. Every record of every section is checked against one schema on
load (grader/loading/persisted.py): a record the kit would never have written (a card due in
year 9999, a negative stability, a date without a zone, a text score) is set aside, one
sentence on stderr says so, and a copy of the file as it was is kept as ``<name>.set-aside``.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from backprop_traps.grader.loading import bounded, persisted

FILENAME = ".backprop_traps_history.json"
VERSION = 1
MAX_BYTES = 4 * 1024 * 1024
"""A history bigger than this is broken (a year of daily practice on every question is ~100 KB)."""
MAX_DEPTH = 32
"""A history nests about 5 deep; past 32 it is broken (refused before ``json.loads`` could recurse)."""
SET_ASIDE = ".set-aside"
"""The suffix of the copy kept of a history some of whose records were set aside."""
_TOLD: set[str] = set()
"""Sentences already said by this process (a command loads the history more than once)."""


def _tell(sentence: str) -> None:
    if sentence not in _TOLD:
        _TOLD.add(sentence)
        print(sentence, file=sys.stderr)


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
        text = raw = None
        try:  # the one bounded way (loading/bounded.py): never hangs, never follows a link
            text = bounded.read_text(path, MAX_BYTES)
            raw = bounded.loads(text, path.name, max_depth=MAX_DEPTH)
        except bounded.Unreadable as e:
            if e.missing:  # nothing to keep
                return cls(path)
            if not e.regular:  # a link, FIFO, device or folder: left where it is, never renamed
                return cls._not_a_file(path, e)
        found = persisted.history(raw)  # every field checked; what fails is set aside
        if found is None:
            return cls._broken(path)
        questions, sections, aside = found
        if aside:
            cls._set_aside(path, text, aside)
        return cls(path, questions, sections)

    @classmethod
    def _set_aside(cls, path: Path, text: str, aside: persisted.SetAside) -> None:
        """Some records failed the schema: one sentence says so, and a copy of the file as it
        was is kept (once: a copy with the same text is not written again), since the next
        save writes the history without them."""
        kept = None
        for n in range(1, 20):
            copy = path.with_name(path.name + SET_ASIDE + ("" if n == 1 else f"-{n}"))
            try:
                if bounded.read_text(copy, MAX_BYTES) == text:
                    kept = copy
                    break
                continue
            except bounded.Unreadable as e:
                if not e.missing:
                    continue
            try:
                with open(copy, "x", encoding="utf-8") as f:  # never through a link, never over a file
                    f.write(text)
                kept = copy
            except OSError:
                pass
            break
        where = f"; the file as it was is kept as {kept.name}." if kept else "."
        _tell(aside.sentence(path.name) + where)

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
