"""The "In the interview" cells, and the revision page built from them (``docs/interview.md``).

Every solution notebook has one markdown cell tagged ``interview`` (``grade release`` copies
it into the stub) in exactly this form, so that tools can read it:

    ## In the interview

    **The question.** "<as an interviewer asks it>"

    **The wrong answer.** "<what most candidates say>" <why it is wrong>

    **The answer that gets you hired.** <a spoken answer, at most ~120 words>

    **What the interviewer is testing.** <one or two sentences>

    **Follow-ups.**
    - *<follow-up question>* <short answer>
    - *<follow-up question>* <short answer>

    **Key points.**
    - <a phrase the learner recognises>: <a way of saying it>; <another + in two parts>

The key points (4 to 7, grammar in ``grader/learner/keypoints.py``) are what
``grade interview`` ticks off in a learner's answer.

``grade release`` writes the revision page from these cells, every question in order, so
the page cannot drift from the notebooks; ``grade release --check`` fails when it is stale.
The page is kept where the questions folder has a ``docs/`` folder (this kit does).
Only the standard library is imported here: ``grade list`` and ``grade release`` stay fast.
"""
from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from backprop_traps.grader.learner import keypoints
from backprop_traps.grader.loading.questions import INTERVIEW_PAGE

TAG = "interview"
HEADING = "## In the interview"
PAGE = INTERVIEW_PAGE
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
    from backprop_traps.grader.loading.notebook import NotebookError, cell_source, parse_notebook
    try:
        nb = parse_notebook(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, NotebookError) as e:
        return None, [f"cannot read the notebook: {e}"]
    cells = find_cells(nb)
    if not cells:
        return None, [f"no markdown cell tagged {TAG!r}"]
    return cell_source(cells[0]), ([] if len(cells) == 1 else [f"{len(cells)} cells tagged {TAG!r}; keep one"])


def collect(root: Path) -> dict[str, tuple[Path, Interview | None, list[str]]]:
    """Every question in order: (its solution notebook, its parsed interview or None, problems)."""
    from backprop_traps.grader.loading.questions import solution_notebooks
    found = {}
    for qid, solution in solution_notebooks(root).items():
        source, problems = read_notebook(solution)
        parsed = parse(source) if source is not None else None
        found[qid] = (solution, parsed, problems + (parsed.problems if parsed else []))
    return found


def problems(root: Path) -> list[str]:
    """One line per question whose interview cell is missing or does not fit the form."""
    return [f"{qid}: interview cell: {'; '.join(found)}"
            for qid, (_, _, found) in collect(root).items() if found]


def _anchor(number: str, qid: str) -> str:
    """GitHub's anchor for the heading ``NN · qid`` (the dot is dropped, spaces become dashes)."""
    return f"{number}--{qid}"


def render(root: Path) -> str:
    """The revision page's text: every question that has an interview cell, in order."""
    sections, toc = [], []
    for qid, (solution, parsed, _) in collect(root).items():
        if parsed is None:
            continue
        number = solution.name.split("_", 1)[0]
        title = f"{number} · {qid}"
        toc.append(f"- [{title}](#{_anchor(number, qid)}): {parsed.question}")
        lines = [f"## {title}", "",
                 f"From [{solution.parent.name}/{solution.name}](../{solution.parent.name}/{solution.name}); "
                 f"practise it with `grade start {qid}`.", "",
                 f"**{QUESTION}** {parsed.question}", "",
                 f"**{WRONG}** {parsed.wrong}", "",
                 f"**{HIRED}** {parsed.hired}", "",
                 f"**{TESTING}** {parsed.testing}", "",
                 f"**{FOLLOW}**", ""]
        lines += [f"- *{q}* {a}" for q, a in parsed.follow_ups]
        if parsed.key_points:
            lines += ["", f"**Key points**, what `grade interview {qid}` listens for:", ""]
            lines += [f"- {p.point}" for p in parsed.key_points]
        sections.append("\n".join(lines))
    head = ["# In the interview: the revision page", "",
            "Every question's interview on one page: the question as it is asked, the wrong answer",
            "most candidates give, the answer that gets you hired, what the interviewer is testing,",
            "the follow-ups and the key points. Read it the evening before; rehearse it aloud",
            "with `grade interview`.", "",
            "Generated by `grade release` from the cell tagged `interview` in each solution notebook;",
            "do not edit it by hand (`grade release --check` fails when it is stale).", ""]
    body = "\n".join(toc) + "\n\n" + "\n\n".join(sections) if sections else "No question has an interview section yet."
    return "\n".join(head) + "\n" + body + "\n"


def page_path(root: Path) -> Path | None:
    """Where the page goes: ``docs/interview.md`` when the questions folder has ``docs/``."""
    docs = Path(root) / PAGE.parent
    return Path(root) / PAGE if docs.is_dir() else None


def sync_page(root: Path, write: bool = True) -> bool:
    """Bring ``docs/interview.md`` in line with the notebooks. Returns whether it differed
    (False where the folder keeps no page); with ``write`` it is rewritten atomically."""
    target = page_path(root)
    if target is None:
        return False
    text = render(root)
    try:
        current = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        current = None
    if current == text:
        return False
    if write:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".interview.", suffix=".md")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return True
