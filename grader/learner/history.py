"""The learner's local history: best score per question and which hints were seen.

It lives in ``.backprop_traps_history.json`` in the folder where ``grade`` runs, so each
practice folder keeps its own progress. It is a convenience, never a source of errors:
a missing, unreadable or corrupt file reads as an empty history, and a folder that cannot
be written to simply keeps none. Writes go to a temporary file first and are then renamed
over the old one, so an interrupted write cannot leave half a file behind.

Format (version 1)::

    {"version": 1, "questions": {"routing_trap": {
        "best": 10.0, "max_score": 12.0, "attempts": 3,
        "hints_seen": {"overlapping windows accumulate (k=3, s=2 and k=3, s=1)": 2},
        "revealed": 2}}}

``revealed`` counts the steps of the solution's derivation that `grade reveal` has shown.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

FILENAME = ".backprop_traps_history.json"
VERSION = 1


def _number(value) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _clean_entry(raw) -> dict:
    """Keep only well-formed fields of one question's entry; drop the rest."""
    entry: dict = {}
    if not isinstance(raw, dict):
        return entry
    for key in ("best", "max_score"):
        if _number(raw.get(key)) is not None:
            entry[key] = _number(raw[key])
    attempts = raw.get("attempts")
    if isinstance(attempts, int) and not isinstance(attempts, bool) and attempts >= 0:
        entry["attempts"] = attempts
    revealed = raw.get("revealed")
    if isinstance(revealed, int) and not isinstance(revealed, bool) and revealed >= 0:
        entry["revealed"] = revealed
    seen = raw.get("hints_seen")
    if isinstance(seen, dict):
        entry["hints_seen"] = {str(k): v for k, v in seen.items()
                               if isinstance(v, int) and not isinstance(v, bool) and v >= 0}
    return entry


class History:
    """The history of one folder. ``load`` never raises; ``save`` returns whether it wrote."""

    def __init__(self, path: Path, questions: dict | None = None):
        self.path = Path(path)
        self.questions: dict[str, dict] = questions or {}

    @classmethod
    def load(cls, folder: str | os.PathLike | None = None) -> "History":
        path = Path(folder or os.getcwd()) / FILENAME
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # missing, unreadable, not JSON, not UTF-8
            return cls(path)
        qs = raw.get("questions") if isinstance(raw, dict) else None
        if not isinstance(qs, dict):
            return cls(path)
        return cls(path, {str(q): _clean_entry(e) for q, e in qs.items()})

    def save(self) -> bool:
        """Write atomically; a folder we cannot write to keeps no history (no error)."""
        text = json.dumps({"version": VERSION, "questions": self.questions}, indent=1, sort_keys=True)
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
    def record_score(self, question: str, score: float, max_score: float) -> None:
        entry = self.questions.setdefault(question, {})
        best = entry.get("best")
        entry["best"] = float(score) if best is None else max(best, float(score))
        entry["max_score"] = float(max_score)
        entry["attempts"] = entry.get("attempts", 0) + 1

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

    # -- the derivation, step by step (`grade reveal`) ------------------------------------
    def revealed(self, question: str) -> int:
        """How many steps of the question's derivation were shown here."""
        return self.questions.get(question, {}).get("revealed", 0)

    def record_revealed(self, question: str, steps: int) -> None:
        entry = self.questions.setdefault(question, {})
        entry["revealed"] = max(entry.get("revealed", 0), int(steps))
