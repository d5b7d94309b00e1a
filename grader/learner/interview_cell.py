"""An interview cell, read: the one markdown cell tagged ``interview`` in a solution notebook,
parsed into its parts (the form is in grader/authoring/interview.py, which writes the revision
page from these cells). `grade interview` reads it on the learner's path, and ``grade
validate`` checks it, so it lives on the learner's side and authoring builds on it.
Only the standard library and the key-point grammar (``keypoints``) are imported here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from backprop_traps.grader.learner import keypoints
from backprop_traps.grader.loading.notebook import NotebookError, cell_source, parse_notebook

TAG = "interview"
HEADING = "## In the interview"
MAX_HIRED_WORDS = 120  # about 50 seconds spoken
FOLLOW_UPS = (2, 4)

QUESTION, WRONG, HIRED, TESTING, FOLLOW, KEY_POINTS = (
    "The question.", "The wrong answer.", "The answer that gets you hired.",
    "What the interviewer is testing.", "Follow-ups.", "Key points.")
LABELS = (QUESTION, WRONG, HIRED, TESTING, FOLLOW, KEY_POINTS)
_LABEL = re.compile(r"^\*\*(" + "|".join(re.escape(label) for label in LABELS) + r")\*\*", re.M)
# "*question* answer": the question's closing * follows a non-space, as markdown's emphasis
# rule has it, so a question may hold `a * b`
_FOLLOW_UP = re.compile(r"^\*(?P<q>\S(?:.*?\S)?)\*(?=\s|$)\s*(?P<a>.*)$", re.S)


@dataclass
class Interview:
    """One question's interview section, as parsed from its notebook cell."""
    question: str = ""
    """The question as the interviewer asks it (with its quotes)."""
    wrong: str = ""
    """The wrong answer most candidates give, and why it is wrong."""
    hired: str = ""
    """The spoken answer that gets you hired."""
    testing: str = ""
    """What the interviewer is testing."""
    follow_ups: list[tuple[str, str]] = field(default_factory=list)
    """(follow-up question, its short answer), two to four of them."""
    key_points: list[keypoints.KeyPoint] = field(default_factory=list)
    """What a spoken answer must say, and the ways of saying it that count."""
    problems: list[str] = field(default_factory=list)
    """What is missing or malformed, one sentence each (empty when the cell is well formed)."""

    @property
    def hired_words(self) -> int:
        return len(self.hired.split())

    @property
    def wrong_quote(self) -> str:
        """The wrong answer as candidates say it: its opening quotation, without the why."""
        m = re.match(r'\s*["“](.*?)["”]', self.wrong)
        return m.group(1) if m else self.wrong


def _join(text: str) -> str:
    """Markdown text with its hard line breaks turned into single spaces."""
    return " ".join(text.split())


def parse(source: str) -> Interview:
    """Parse the source of an interview cell; ``problems`` says what does not fit the form."""
    found = Interview()
    if not source.lstrip().startswith(HEADING):
        found.problems.append(f"the cell does not start with the heading {HEADING!r}")
    marks = list(_LABEL.finditer(source))
    parts: dict[str, str] = {}
    for mark, following in zip(marks, marks[1:] + [None]):
        end = following.start() if following else len(source)
        if mark.group(1) in parts:
            found.problems.append(f"the label **{mark.group(1)}** appears twice")
        parts[mark.group(1)] = source[mark.end():end].strip()
    missing = [label for label in LABELS if label not in parts]
    if missing:
        found.problems.append("missing " + ", ".join(f"**{label}**" for label in missing))
    order = [m.group(1) for m in marks]
    if not missing and order != list(LABELS):
        found.problems.append("the labels are not in the order " + ", ".join(LABELS))
    found.question, found.wrong = _join(parts.get(QUESTION, "")), _join(parts.get(WRONG, ""))
    found.hired, found.testing = _join(parts.get(HIRED, "")), _join(parts.get(TESTING, ""))
    for item in re.split(r"^- ", parts.get(FOLLOW, ""), flags=re.M)[1:]:
        m = _FOLLOW_UP.match(item.strip())
        if m and m.group("a").strip():
            found.follow_ups.append((_join(m.group("q")), _join(m.group("a"))))
        else:
            found.problems.append(f"a follow-up is not '- *question* answer': {_join(item)[:60]!r}")
    if KEY_POINTS in parts:
        found.key_points, key_problems = keypoints.parse(parts[KEY_POINTS])
        found.problems += [f"**{KEY_POINTS}** {p}" for p in key_problems]
    for label, text in ((QUESTION, found.question), (WRONG, found.wrong), (HIRED, found.hired),
                        (TESTING, found.testing)):
        if label in parts and not text:
            found.problems.append(f"**{label}** is empty")
    if found.hired_words > MAX_HIRED_WORDS:
        found.problems.append(f"the hired answer has {found.hired_words} words; keep it to "
                              f"{MAX_HIRED_WORDS} (about 50 seconds spoken)")
    low, high = FOLLOW_UPS
    if FOLLOW in parts and not low <= len(found.follow_ups) <= high:
        found.problems.append(f"{len(found.follow_ups)} follow-ups; write {low} to {high}")
    return found


def _tags(cell: dict) -> list:
    meta = cell.get("metadata")
    return (meta.get("tags") or []) if isinstance(meta, dict) else []


def find_cells(nb: dict) -> list[dict]:
    """The notebook's markdown cells tagged ``interview`` (a well-formed notebook has one)."""
    return [c for c in nb.get("cells", [])
            if isinstance(c, dict) and c.get("cell_type") == "markdown" and TAG in _tags(c)]


def read_notebook(path: Path) -> tuple[str | None, list[str]]:
    """(the interview cell's source or None, problems), read with the standard library only."""
    try:
        nb = parse_notebook(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, NotebookError) as e:
        return None, [f"cannot read the notebook: {e}"]
    cells = find_cells(nb)
    if not cells:
        return None, [f"no markdown cell tagged {TAG!r}"]
    return cell_source(cells[0]), ([] if len(cells) == 1 else [f"{len(cells)} cells tagged {TAG!r}; keep one"])
