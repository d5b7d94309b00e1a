"""What each student's grade row must say beside its points, so that no flag is lost at export.

A plain 0 hides four different stories: a wrong answer, a file that could not be graded (an
empty file, a truncated notebook, a grader error), a question the student handed nothing in
for, and the question's stub handed in untouched. Each (student, question) gets one status:

- ``graded``: at least one of the student's files for it was graded;
- ``untouched stub``: the only files are the stub as released (``untouched.py``);
- ``could not grade``: every file for it had an error (the sentence is kept as the detail);
- ``missing``: nothing was handed in for it (a question the class answered, or any student on
  the roster who handed in nothing at all).

and ``late`` on top, with a due date, when one of its files was handed in after it. The row's
``status`` is ``graded`` when nothing is flagged, else the flags, question by question.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from backprop_traps.grader.batch.layouts import parse_time
from backprop_traps.grader.batch.needs_a_look import reason

GRADED, UNTOUCHED, COULD_NOT_GRADE, MISSING = "graded", "untouched stub", "could not grade", "missing"


@dataclass
class Cell:
    """One student's standing on one question."""
    status: str = MISSING
    detail: str = ""
    """Why it could not be graded (the result's error), when that is the status."""
    late: bool = False
    """Handed in after the due date (only set when a due date is given)."""
    look: str = ""
    """Graded, but the score says little (timed out, out of memory, not valid Python...):
    ``needs_a_look``'s reason."""

    def phrase(self) -> str:
        """The cell's flag in a few words; empty when graded and nothing to look at."""
        if self.status == GRADED:
            return f"graded, needs a look ({self.look})" if self.look else ""
        return self.status


@dataclass
class Row:
    """One student's cells, every question of the class present."""
    student: str
    cells: dict[str, Cell] = field(default_factory=dict)
    on_roster_only: bool = False
    """Named on the roster, no file at all."""

    def flags(self) -> list[str]:
        """The row's flags, one phrase each, in question order; empty when all is well."""
        out = [f"{q}: {c.phrase()}" for q, c in self.cells.items() if c.phrase()]
        late = [q for q, c in self.cells.items() if c.late]
        if late:
            out.append("late" + ("" if len(late) == len(self.cells) else f" ({', '.join(late)})"))
        return out

    def status(self) -> str:
        if self.on_roster_only:
            return "missing: nothing handed in"
        return "; ".join(self.flags()) or GRADED


def file_status(result: dict, meta: dict) -> tuple[str, str]:
    """(status, detail) of one file: for a graded one, the detail is why it needs a look."""
    if result.get("error") or result.get("grader_error"):
        return COULD_NOT_GRADE, str(result.get("error") or "the grader broke on it")
    if meta.get("untouched_stub"):
        return UNTOUCHED, ""
    found = reason(result)
    return GRADED, found[0] if found else ""


def class_rows(found, columns: list[str], roster: list[str] = (), due: datetime | None = None) -> list[Row]:
    """One row per student (every student with a result, and every roster name), sorted;
    ``found`` is ``ResultStore.everything()``: (job, result, sidecar) triples."""
    files: dict[str, dict[str, list[tuple[str, str]]]] = {}
    late: set[tuple[str, str]] = set()
    for job, result, meta in found:
        mine = files.setdefault(job.student, {})
        question = result.get("question")
        if question in columns:
            mine.setdefault(question, []).append(file_status(result, meta))
            if due is not None and _late(meta, due):
                late.add((job.student, question))
    rows = {student: Row(student, {q: _cell(mine[q], (student, q) in late) if q in mine else Cell()
                                   for q in columns})
            for student, mine in files.items()}
    for name in roster:
        if name not in rows:
            rows[name] = Row(name, {q: Cell() for q in columns}, on_roster_only=True)
    return [rows[s] for s in sorted(rows)]


def _cell(statuses: list[tuple[str, str]], late: bool) -> Cell:
    """One question's cell from its files' (status, detail): the best file speaks for it."""
    graded = [detail for status, detail in statuses if status == GRADED]
    if graded:
        return Cell(GRADED, late=late, look="" if "" in graded else graded[0])
    if any(status == UNTOUCHED for status, _ in statuses):
        return Cell(UNTOUCHED, late=late)
    return Cell(COULD_NOT_GRADE, detail=statuses[0][1], late=late)


def _late(meta: dict, due: datetime) -> bool:
    try:
        return parse_time(str(meta.get("submitted_at"))) > due
    except ValueError:
        return False


def read_roster(path: str | Path) -> list[str]:
    """Student ids from a roster file: one per line, or a CSV whose first column holds them
    (a header row named ``student``, ``username``, ``id`` or ``login`` is skipped). Bounded:
    a roster is small, and larger files are refused."""
    from backprop_traps.grader.batch.store import read_capped
    raw = read_capped(Path(path), cap=4 * 1024 * 1024)
    if raw is None:
        raise ValueError(f"{path} is not a readable regular file of at most 4 MB")
    names = []
    for line in raw.decode("utf-8-sig", errors="replace").splitlines():
        first = line.split(",")[0].strip().strip('"').strip()
        if first and not first.startswith("#"):
            names.append(first)
    if names and names[0].lower() in ("student", "username", "id", "login", "sis login id"):
        names = names[1:]
    return sorted(set(names))


def flagged_lines(rows: list[Row], shown=str) -> list[str]:
    """One line per flagged student, for the instructor's terminal at export time; ``shown``
    makes names and details inert."""
    lines = []
    for row in rows:
        if row.on_roster_only:
            lines.append(shown(f"{row.student}: handed in nothing (on the roster)"))
            continue
        parts = []
        for q, c in row.cells.items():
            if c.status == COULD_NOT_GRADE:
                parts.append(f"{q} could not be graded ({c.detail[:120]})")
            elif c.phrase():
                parts.append(f"{q} {c.phrase()}")
        late = [q for q, c in row.cells.items() if c.late]
        if late:
            parts.append(f"late ({', '.join(late)})")
        if parts:
            lines.append(shown(f"{row.student}: " + "; ".join(parts)))
    return lines
