"""A batch's grades for a learning platform: ``grade export OUTDIR [--format] [--due]``.

Read from the results in OUTDIR (as the gradebook is), one row per student, each
question's best score (a student may hand in several files for one), its maximum, the
total, the maximum and the percentage, and with ``--due`` whether anything was handed in
after it (nbgrader's ``timestamp.txt``, else the file's modification time, kept in each
result's sidecar as ``submitted_at``). A question a student handed nothing in for counts 0,
and every row says why a 0 is a 0 (``status.py``: graded, could not grade, missing, untouched
stub, late); a roster adds the students who handed in nothing at all.

Three formats, every cell made safe for a spreadsheet (``gradebook.safe_row``):
- ``csv``: ``student``, ``<id>``, ``<id> max`` per question, ``total``, ``max``, ``percent``
  (and ``late`` with ``--due``): the contract's columns (docs/contract.md), then ``status``.
- ``canvas``: Canvas's gradebook import (Grades > Import): the identifying columns of its own
  export, ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column
  per question (a column whose name matches no assignment creates one), after a
  ``Points Possible`` row, then ``Notes``: Canvas imports it into the gradebook's Notes
  column (shown with View > Notes before importing; otherwise Canvas ignores it). The student
  id goes into ``Student`` and ``SIS Login ID``.
- ``moodle``: Moodle's "Import grades from CSV file": ``Username``, one column per question,
  ``Total``, then ``<id> feedback`` per question (its status, empty when graded); on import
  map ``Username`` to the user's username, each question column to its grade item and each
  feedback column to "Feedback for" that item.
"""
from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from backprop_traps.grader.batch.gradebook import _fmt, question_columns, safe_row
from backprop_traps.grader.batch.layouts import parse_time
from backprop_traps.grader.batch.status import GRADED, Cell, Row, class_rows
from backprop_traps.grader.batch.store import ResultStore

FORMATS = ("csv", "canvas", "moodle")


@dataclass
class StudentGrades:
    """One student's row: best points per question, and when they last handed something in."""
    student: str
    points: dict[str, float] = field(default_factory=dict)
    last_submitted: datetime | None = None


def class_grades(outdir: Path, known: list[str]) -> tuple[list[StudentGrades], dict[str, float]]:
    """(one entry per student, sorted; each question's maximum) from OUTDIR's results."""
    from backprop_traps.grader.batch.gradebook import Entry
    found = ResultStore.existing(outdir).everything()
    columns = question_columns([Entry(job, result) for job, result, _ in found], known)
    maxima: dict[str, float] = defaultdict(float)
    students: dict[str, StudentGrades] = {}
    for job, result, meta in found:
        row = students.setdefault(job.student, StudentGrades(job.student))
        question = result.get("question")
        if question in columns:
            score = float(result.get("score") or 0.0)
            maxima[question] = max(maxima[question], float(result.get("max_score") or 0.0))
            row.points[question] = max(score, row.points.get(question, score))
        try:
            when = parse_time(str(meta.get("submitted_at")))
        except ValueError:
            continue
        row.last_submitted = max(when, row.last_submitted) if row.last_submitted else when
    return [students[s] for s in sorted(students)], {q: maxima[q] for q in columns}


def _late(row: StudentGrades, due: datetime | None) -> str:
    if due is None:
        return ""
    if row.last_submitted is None:
        return "unknown"
    return "yes" if row.last_submitted > due else "no"


def export_text(outdir: Path, known: list[str], fmt: str = "csv", due: datetime | None = None,
                roster: list[str] = ()) -> str:
    """The export of OUTDIR in ``fmt`` (one of ``FORMATS``)."""
    return export_table(outdir, known, fmt, due, roster)[0]


def export_table(outdir: Path, known: list[str], fmt: str = "csv", due: datetime | None = None,
                 roster: list[str] = ()) -> tuple[str, list[Row]]:
    """(the export's text, each student's status row): the rows name what was flagged."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    grades, maxima = class_grades(outdir, known)
    questions, top = list(maxima), sum(maxima.values())
    statuses = {r.student: r for r in class_rows(ResultStore.existing(outdir).everything(), questions,
                                                 roster, due)}
    points = {g.student: g for g in grades}
    rows = [(points.get(s) or StudentGrades(s), statuses[s]) for s in sorted(statuses)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")

    def total(row):
        return sum(row.points.values())

    if fmt == "csv":
        writer.writerow(safe_row(["student", *(c for q in questions for c in (q, f"{q} max")),
                                  "total", "max", "percent", *(["late"] if due else []), "status"]))
        for row, flags in rows:
            cells = [c for q in questions for c in (_fmt(row.points.get(q, 0.0)), _fmt(maxima[q]))]
            percent = f"{100 * total(row) / top:.1f}" if top else "0.0"
            writer.writerow(safe_row([row.student, *cells, _fmt(total(row)), _fmt(top), percent,
                                      *([_late(row, due)] if due else []), flags.status()]))
    elif fmt == "canvas":
        writer.writerow(safe_row(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *questions, "Notes"]))
        writer.writerow(safe_row(["    Points Possible", "", "", "", "", *(_fmt(maxima[q]) for q in questions), ""]))
        for row, flags in rows:
            note = flags.status()
            writer.writerow(safe_row([row.student, "", "", row.student, "",
                                      *(_fmt(row.points.get(q, 0.0)) for q in questions),
                                      "" if note == GRADED else note]))
    else:
        writer.writerow(safe_row(["Username", *questions, "Total", *(f"{q} feedback" for q in questions)]))
        for row, flags in rows:
            feedback = [_feedback(flags.cells.get(q), flags.on_roster_only) for q in questions]
            writer.writerow(safe_row([row.student, *(_fmt(row.points.get(q, 0.0)) for q in questions),
                                      _fmt(total(row)), *feedback]))
    return out.getvalue(), [flags for _, flags in rows]


def _feedback(cell: Cell | None, nothing_handed_in: bool) -> str:
    """A Moodle feedback cell: empty when graded on time, else what happened, in words."""
    if nothing_handed_in or cell is None:
        return "missing: nothing handed in"
    words = [] if cell.status == GRADED else [cell.status + (f": {cell.detail[:200]}" if cell.detail else "")]
    return "; ".join(words + (["late"] if cell.late else []))
