"""A question's answers corpus: ``tests/answers/<id>/*.py``, each with what it must get.

A file is either a snippet, appended to the solution's code (it redefines a function or
two to make one mistake), or, when it has a ``# question: <id>`` line, a complete answer
graded on its own. Its expectation comes from a header line among the comments it starts
with:

- ``# expect: full``: full marks;
- ``# expect: trap=<trap-id>``: loses points, and a failing check names that trap;
- ``# expect: wrong``: loses points (no particular trap);
- ``# expect: unnamed``: loses points, and no check names any trap (a mistake no trap
  explains, e.g. float32 where float64 is asked: a wrong name is worse than none);
- ``# expect: error``: not graded at all (``error`` says why, e.g. the file answers another
  question).

Optional lines refine any of these: ``# not named: <trap-id> ...`` (those traps must not
be named: another question's classic mistake of the same shape, or a second mistake that a
trap's formula does not explain), ``# also named: <trap-id> ...`` (an answer that combines
mistakes: each must be named by some check), and ``# says: <text>`` (the report, an error or a failing
check's feedback, contains that text, case-insensitive).

Without one, the file's name decides, as before: ``<trap id, - as _>.py`` expects that
trap, ``torch_answer.py`` full marks; any other file has no expectation and is not checked.
Every answer is graded for real, through the sandbox (``grade_path``), as a learner's file.
"""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

_EXPECT = re.compile(r"^#\s*expect:\s*(full|wrong|unnamed|error|trap\s*=\s*([A-Za-z0-9_-]+))\s*$")
_NOT_NAMED = re.compile(r"^#\s*not named:\s*([A-Za-z0-9_ -]+?)\s*$")
_ALSO_NAMED = re.compile(r"^#\s*also named:\s*([A-Za-z0-9_ -]+?)\s*$")
_SAYS = re.compile(r"^#\s*says:\s*(.+?)\s*$")
_QUESTION = re.compile(r"^#\s*question:\s*[A-Za-z0-9_]+\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Answer:
    path: Path
    kind: str
    """full, trap, wrong, or "" (no expectation: not checked)."""
    trap: str | None = None
    complete: bool = False
    """A complete answer (it has a ``# question:`` line), not a snippet for the solution."""
    not_named: tuple[str, ...] = ()
    """Traps no failing check may name on this answer."""
    says: str = ""
    """Text the report must contain (an error, or a failing check's feedback)."""
    also_named: tuple[str, ...] = ()
    """More traps a failing check must name (mistakes combined in one answer)."""

    @property
    def expects(self) -> str:
        return {"full": "full marks", "wrong": "to lose points", "error": "not to be graded",
                "unnamed": "to lose points with no trap named",
                "trap": f"to lose points with trap '{self.trap}' named"}.get(self.kind, "nothing")


def answers_folder(root: Path, question: str) -> Path:
    return root / "tests" / "answers" / question


def header_expectation(text: str) -> tuple[str, str | None] | None:
    """``(kind, trap)`` from an ``# expect:`` line among the comments the file starts with."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        found = _EXPECT.match(stripped)
        if found:
            return ("trap", found.group(2)) if found.group(2) else (found.group(1), None)
    return None


def header_lines(text: str, pattern) -> list[str]:
    """``pattern``'s first group on each comment line the file starts with."""
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        match = pattern.match(stripped)
        if match:
            found.append(match.group(1))
    return found


def read_answer(path: Path, trap_ids) -> Answer:
    text = path.read_text(encoding="utf-8")
    complete = bool(_QUESTION.search(text))
    found = header_expectation(text)
    if found is not None:
        not_named = tuple(t for line in header_lines(text, _NOT_NAMED) for t in line.split())
        also = tuple(t for line in header_lines(text, _ALSO_NAMED) for t in line.split())
        return Answer(path, found[0], found[1], complete, not_named, " ".join(header_lines(text, _SAYS)), also)
    if path.stem.replace("_", "-") in trap_ids:
        return Answer(path, "trap", path.stem.replace("_", "-"), complete)
    if path.stem == "torch_answer":
        return Answer(path, "full", None, complete)
    return Answer(path, "", None, complete)


def answers(root: Path, question: str, trap_ids) -> list[Answer]:
    folder = answers_folder(root, question)
    return [read_answer(p, set(trap_ids)) for p in sorted(folder.glob("*.py"))] if folder.is_dir() else []


def submission_text(answer: Answer, question: str, base: str) -> str:
    """What is graded: a complete answer as it is, a snippet after the solution's code."""
    text = answer.path.read_text(encoding="utf-8")
    if answer.complete:
        return text
    return f"# question: {question}\n{base}\n\n# --- the answer under test ---\n{text}"


def grade_answer(answer: Answer, question: str, root: Path, seed: int, base: str):
    """Grade one answer through the sandbox, as ``grade`` grades a learner's ``.py``."""
    from backprop_traps.grader.engine.run import grade_path
    if answer.complete:
        return grade_path(answer.path, question=question, seed=seed, root=root)
    with tempfile.TemporaryDirectory(prefix="bpt-corpus-") as folder:
        path = Path(folder) / answer.path.name
        path.write_text(submission_text(answer, question, base), encoding="utf-8")
        return grade_path(path, question=question, seed=seed, root=root)


def mismatch(answer: Answer, result, shown: str) -> str | None:
    """Why ``result`` is not what ``answer`` (shown as ``shown``) expects, in one line; None
    when it is."""
    if answer.kind == "error" or result.error:
        if answer.kind != "error":
            return f"{shown} could not be graded: {result.error}"
        if not result.error:
            return f"{shown} should not be graded (another question's file?), but was"
        if answer.says and answer.says.lower() not in result.error.lower():
            return f"{shown}: the error does not say '{answer.says}': {result.error}"
        return None
    lost = result.max_score - result.score
    named = sorted({t.trap for t in result.tests if not t.passed and t.trap})
    failing = [t for t in result.tests if not t.passed]
    first = f" ({failing[0].name}: {failing[0].feedback.splitlines()[0] if failing[0].feedback else 'failed'})" \
        if failing else ""
    points = f"{lost:g} point" + ("" if lost == 1 else "s")
    if answer.kind == "full" and lost > 0:
        return f"{shown} should get full marks, but gets {result.score:g}/{result.max_score:g}{first}"
    if answer.kind == "trap" and lost == 0:
        return f"trap '{answer.trap}' is no longer caught: {shown} gets full marks"
    if answer.kind == "wrong" and lost == 0:
        return f"{shown} should lose points, but gets full marks"
    if answer.kind == "trap" and answer.trap not in named:
        return (f"trap '{answer.trap}' loses {points} but no check names it (named: "
                f"{', '.join(named) or 'none'}; {shown}){first}")
    if answer.kind == "unnamed" and (lost == 0 or named):
        return (f"{shown} should lose points with no trap named, but "
                + (f"is named {', '.join(named)}{first}" if named else "gets full marks"))
    missing = sorted(set(answer.also_named) - set(named))
    if missing:
        return (f"{shown} combines mistakes, but {', '.join(missing)} is not named "
                f"(named: {', '.join(named) or 'none'})")
    wrongly = sorted(set(named) & set(answer.not_named))
    if wrongly:
        return f"{shown} is named {', '.join(wrongly)}, a trap that does not explain it{first}"
    if answer.says and lost > 0 and not any(answer.says.lower() in t.feedback.lower() for t in failing):
        return f"{shown}: no failing check says '{answer.says}'{first}"
    return None
