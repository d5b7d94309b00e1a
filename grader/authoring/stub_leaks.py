"""``grade validate``'s proof that a stub is for practice, not reading (issue 22).

Five findings per question, each a FAIL with the offending text when it does not hold:

1. the stub quotes no run of 12 words of the interview's hired answer;
2. the stub does not list the graded mistakes: no "mistakes the grader" section, and no
   trap id written as a name (``**lost-overlap**``, `` `lost-overlap` ``, a hyphenated id
   anywhere);
3. no line of the solution's code (inside ``### BEGIN SOLUTION`` … ``### END SOLUTION``)
   stands in the stub's prose: its markdown, comments and docstrings;
4. the stub has its "Your derivation" answer cell (an nbgrader manually graded answer with
   points), and the solution has a derivation for `grade reveal` to show;
5. the specification points at no graded mistake: no warning words, no trap id spelled out in
   words, no trap's word emphasised on its own (``named_mistakes``, issue 37);
6. a section about what comes after solving ("Where to go next", "On a GPU") only points at the
   reference (``stub_layout.after_solving_pointer``): a description of the kernels is a
   description of the answer (issue 50: "backward from the saved x", "with the identity added").
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from backprop_traps.grader.authoring.findings import FAIL, OK, QuestionReport
from backprop_traps.grader.authoring.named_mistakes import named_mistakes
from backprop_traps.grader.authoring.stub_layout import (ANSWER_GRADE_ID, after_solving_pointer, derivation_steps,
                                                         is_after_solving, is_answer_cell)
from backprop_traps.grader.authoring.stub_prose import prose_of_code, stub_prose  # noqa: F401 (named here too)

RUN_WORDS = 12
MIN_CODE_LINE = 16  # shorter solution lines (`return dx`, `k, s = k, s`) are not an answer
_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
_COMPUTES = re.compile(r"[=+\-*/@%\[]")


def words(text: str) -> list[str]:
    """Lower-case words and numbers, punctuation and markdown dropped."""
    return _WORD.findall(text.lower())


def quoted_runs(answer: str, text: str, n: int = RUN_WORDS) -> list[str]:
    """Every run of ``n`` words of ``answer`` that ``text`` also holds (overlapping runs merged)."""
    mine, theirs = words(answer), words(text)
    seen = {tuple(theirs[i:i + n]) for i in range(len(theirs) - n + 1)}
    hits, i = [], 0
    while i <= len(mine) - n:
        if tuple(mine[i:i + n]) in seen:
            j = i + n
            while j < len(mine) and tuple(mine[j - n + 1:j + 1]) in seen:
                j += 1
            hits.append(" ".join(mine[i:j]))
            i = j
        else:
            i += 1
    return hits


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def solution_code_lines(solution: dict) -> list[str]:
    """The solution's own lines of code: the bodies between the nbgrader markers, comments cut."""
    lines = []
    for cell in solution["cells"]:
        for body in _SOLUTION.findall("".join(cell.get("source", ""))):
            for line in body.splitlines():
                code = line.split("  #", 1)[0].strip()
                computes = _COMPUTES.search(code)  # not a bare list of names (a call's last line)
                if len(code) >= MIN_CODE_LINE and not code.startswith("#") and computes:
                    lines.append(code)
    return lines


def code_in_prose(solution: dict, stub: dict) -> list[str]:
    """The solution's lines of code that stand in the stub's prose (spacing ignored)."""
    prose = _squash(stub_prose(stub))
    return [line for line in dict.fromkeys(solution_code_lines(solution)) if _squash(line) in prose]


def listed_traps(trap_ids, stub: dict) -> list[str]:
    """How the stub lists graded mistakes: the section's heading, or trap ids as names."""
    text = "\n".join("".join(c.get("source", "")) for c in stub["cells"])
    found = []
    if re.search(r"mistakes the grader", text, re.I):
        found.append('a "mistakes the grader ..." section')
    for trap in trap_ids:
        named = re.escape(trap)
        as_name = rf"\*\*{named}\*\*|`{named}`|trap:\s*{named}\b"
        anywhere = rf"(?<![\w-]){named}(?![\w-])" if "-" in trap else None
        if re.search(as_name, text) or (anywhere and re.search(anywhere, text)):
            found.append(f"the trap id {trap}")
    return found


def _answer_cell_problem(stub: dict) -> str | None:
    cell = next((c for c in stub["cells"] if is_answer_cell(c)), None)
    if cell is None:
        return f'no "Your derivation" answer cell (a markdown cell with nbgrader grade_id {ANSWER_GRADE_ID})'
    meta = cell["metadata"]["nbgrader"]
    if cell.get("cell_type") != "markdown" or not (meta.get("solution") and meta.get("grade")):
        return "the answer cell is not an nbgrader manually graded markdown answer (solution + grade)"
    if not meta.get("points"):
        return "the answer cell carries no points"
    return None


def check_stub_practice(report: QuestionReport, question: str, root: Path, trap_ids=()) -> None:
    """Add the six findings (see the module docstring) for ``question`` to ``report``."""
    from backprop_traps.grader.authoring.interview import find_cells, parse
    from backprop_traps.grader.loading.questions import exercise_path, solution_path
    stub_file = exercise_path(question, root)
    if not stub_file.is_file():
        report.add(FAIL, "no stub to check for leaks: run `grade release`")
        return
    stub = json.loads(stub_file.read_text(encoding="utf-8"))
    solution = json.loads(solution_path(question, root).read_text(encoding="utf-8"))
    text = "\n".join("".join(c.get("source", "")) for c in stub["cells"])

    interview = find_cells(solution)
    hired = parse("".join(interview[0].get("source", ""))).hired if interview else ""
    runs = quoted_runs(hired, text) if hired else []
    _add(report, runs, f"the stub quotes no {RUN_WORDS}-word run of the hired answer",
         f"the stub quotes the hired answer ({len(runs)} run(s) of {RUN_WORDS}+ words)")
    listed = listed_traps(trap_ids, stub)
    _add(report, listed, "the stub does not list the graded mistakes", "the stub lists the graded mistakes")
    from backprop_traps.grader.loading.questions import solution_notebooks
    named = named_mistakes(stub, trap_ids, list(solution_notebooks(root)))
    _add(report, named, "the specification names none of the graded mistakes",
         "the specification names graded mistakes (state the convention, not the trap)")
    described = [cell_text.splitlines()[0] for cell_text in ("".join(c.get("source", "")).strip()
                 for c in stub["cells"] if is_after_solving(c))
                 if cell_text != after_solving_pointer(cell_text, question)]
    _add(report, described, "the stub's sections for after solving point at the reference, never describe it",
         "the stub describes the reference in a section for after solving (run `grade release`)")
    code = code_in_prose(solution, stub)
    _add(report, code, "no line of the solution's code stands in the stub's prose",
         "the stub's prose holds lines of the solution's code")
    problem = _answer_cell_problem(stub)
    steps = len(derivation_steps(solution))
    if problem or not steps:
        report.add(FAIL, problem or "the solution has no derivation cells (tag `derivation`) for "
                                    "`grade reveal` to show")
    else:
        report.add(OK, f'the stub has its "Your derivation" answer cell; the solution\'s derivation '
                       f"has {steps} step(s)")


def _add(report: QuestionReport, found: list[str], ok: str, fail: str) -> None:
    if found:
        report.add(FAIL, fail, found)
    else:
        report.add(OK, ok)
