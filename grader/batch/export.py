"""A batch's grades for a learning platform: ``grade export OUTDIR [--format] [--due]``.

Read from the results in OUTDIR (as the gradebook is), one row per student, each
question's best score (a student may hand in several files for one), its maximum, the
total, the maximum and the percentage, and with ``--due`` whether anything was handed in
after it (nbgrader's ``timestamp.txt``, else the file's modification time, kept in each
result's sidecar as ``submitted_at``). A question a student handed nothing in for counts 0.

Three formats, every cell made safe for a spreadsheet (``gradebook.safe_row``):
- ``csv``: ``student``, ``<id>``, ``<id> max`` per question, ``total``, ``max``, ``percent``
  (and ``late`` with ``--due``): the contract's columns (docs/contract.md).
- ``canvas``: Canvas's gradebook import (Grades > Import): the identifying columns of its own
  export, ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column
  per question (a column whose name matches no assignment creates one), after a
  ``Points Possible`` row. The student id goes into ``Student`` and ``SIS Login ID``.
- ``moodle``: Moodle's "Import grades from CSV file": ``Username``, one column per question
  and ``Total``; on import map ``Username`` to the user's username and each column to its
  grade item.
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


def export_text(outdir: Path, known: list[str], fmt: str = "csv", due: datetime | None = None) -> str:
    """The export of OUTDIR in ``fmt`` (one of ``FORMATS``)."""
    rows, maxima = class_grades(outdir, known)
    questions, top = list(maxima), sum(maxima.values())
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")

    def total(row):
        return sum(row.points.values())

    if fmt == "csv":
        writer.writerow(safe_row(["student", *(c for q in questions for c in (q, f"{q} max")),
                                  "total", "max", "percent", *(["late"] if due else [])]))
        for row in rows:
            cells = [c for q in questions for c in (_fmt(row.points.get(q, 0.0)), _fmt(maxima[q]))]
            percent = f"{100 * total(row) / top:.1f}" if top else "0.0"
            writer.writerow(safe_row([row.student, *cells, _fmt(total(row)), _fmt(top), percent,
                                      *([_late(row, due)] if due else [])]))
    elif fmt == "canvas":
        writer.writerow(safe_row(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *questions]))
        writer.writerow(safe_row(["    Points Possible", "", "", "", "", *(_fmt(maxima[q]) for q in questions)]))
        for row in rows:
            writer.writerow(safe_row([row.student, "", "", row.student, "",
                                      *(_fmt(row.points.get(q, 0.0)) for q in questions)]))
    elif fmt == "moodle":
        writer.writerow(safe_row(["Username", *questions, "Total"]))
        for row in rows:
            writer.writerow(safe_row([row.student, *(_fmt(row.points.get(q, 0.0)) for q in questions),
                                      _fmt(total(row))]))
    else:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    return out.getvalue()
