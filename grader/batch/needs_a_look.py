"""Which submissions an instructor should open: the ones whose score says less than usual.

A low score may be a wrong answer, or a file that never really ran: it timed out, ran out of
memory, was not valid Python, raised while loading, could not be read, or the grader itself
broke. Those are listed apart in summary.txt (and counted on the terminal), each with the
student and the reason, so nobody has to read 300 low scores to find the five broken files.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# (reason shown, what in the result's texts says so), first match wins; order matters:
# a grader error or an unreadable file says nothing about the learner's code.
_REASONS = (
    ("grader error", re.compile(r"internal (grader|batch) error")),
    ("timed out", re.compile(r"did not finish within|grading did not finish")),
    ("out of memory", re.compile(r"MemoryError|out of memory|memory limit|killed by SIGKILL")),
    ("not valid Python", re.compile(r"is not valid Python|SyntaxError|IndentationError")),
    ("raised while loading", re.compile(r"raised \w+.*(did not run|while loading)")),
    ("grading process died", re.compile(r"grading process (died|kept being changed)|Dask task failed")),
)


@dataclass(frozen=True)
class Look:
    """One submission to open, and why."""
    student: str
    file: str
    reason: str
    detail: str


def _texts(result: dict) -> list[str]:
    texts = [str(result.get("error") or "")]
    texts += [str(w) for w in result.get("warnings") or []]
    texts += [str(t.get("feedback") or "") for t in result.get("tests") or [] if isinstance(t, dict)]
    return [t for t in texts if t]


def reason(result: dict) -> tuple[str, str] | None:
    """(reason, the sentence that shows it) when ``result`` needs a look, else None."""
    texts = _texts(result)
    if result.get("grader_error"):
        return "grader error", next((t for t in texts if "grader" in t), texts[0] if texts else "")
    for label, pattern in _REASONS:
        for text in texts:
            if pattern.search(text):
                return label, text
    if result.get("error"):
        return "could not be graded", str(result["error"])
    return None


def needing_a_look(entries) -> list[Look]:
    """Every entry (``job``, ``result``) that needs a look, by student then file."""
    looks = []
    for entry in entries:
        found = reason(entry.result)
        if found:
            looks.append(Look(entry.job.student, entry.job.rel, found[0], found[1]))
    return sorted(looks, key=lambda look: (look.student, look.file))
