"""The stub layout (issue 22): what a solution notebook keeps for itself, and what its stub gets.

A solution notebook marks its cells with tags in ``metadata.tags``:

- ``derivation``: one step of the derivation per markdown cell, in the order `grade reveal`
  shows them. The stub drops them all.
- ``solution-only``: "The mistakes the grader names" and anything else that gives the
  answer away. The stub drops it.
- ``interview``: the interview cell. The stub keeps its heading and the question, and one
  line that sends the learner to `grade interview <id>`.

A section about what comes after solving ("Where to go next", "On a GPU", "Why this question
has no CUDA kernel") describes the reference kernels, and so the answer (the kernels do what the
functions do: "backward from the saved x", "with the identity added"). The stub keeps its
heading and one generated line that points at `grade start <id> --solution` (issue 50 item 4).

Where the first derivation cell sits, the solution holds the "Your derivation" answer cell:
an nbgrader manually graded markdown answer (``grade_id`` ``derivation_answer``, solution and
grade metadata with points), which `grade release` adds when it is missing. nbgrader's
ClearSolutions turns its solution region into "YOUR ANSWER HERE" in the stub. `grade` never
scores it: the report lists it as not auto-graded.

Every code cell but "Grade it" carries the tag ``raises-exception`` in the stub (the
learner's code cells, visible tests, demos), so that Jupyter's Run All (and nbclient) goes
on past any error, a syntax error in the learner's own cell included, to the "Grade it"
cell, which reports it; an nbgrader course still sees the error in the cell's output and
scores it as before.

Only the standard library is imported here: `grade reveal` reads derivations on the
learner's path.
"""
from __future__ import annotations

import re

from backprop_traps.grader.learner.derivation import DERIVATION, derivation_steps, tags  # noqa: F401 (named here too)

SOLUTION_ONLY = "solution-only"
INTERVIEW = "interview"
RUN_ALL_GOES_ON = "raises-exception"
ANSWER_GRADE_ID = "derivation_answer"
ANSWER_POINTS = 2
ANSWER_HEADING = "## Your derivation"
_SELF_GRADE_ID = "grade_this_notebook"


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _nbgrader(cell: dict) -> dict:
    meta = (cell.get("metadata") or {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def is_answer_cell(cell: dict) -> bool:
    return _nbgrader(cell).get("grade_id") == ANSWER_GRADE_ID


def answer_source(question: str) -> str:
    return (f"{ANSWER_HEADING}\n\n"
            "Derive it here, in your own words, before you look at any derivation: what the "
            "forward computes, then the backward it implies, step by step, with the shapes. "
            "Then write the code below. Stuck? `grade reveal " + question + "` shows the "
            "reference derivation one step at a time.\n\n"
            "### BEGIN SOLUTION\n"
            "The reference derivation follows, one step per cell (tagged `derivation`); "
            f"`grade reveal {question}` shows it to a learner step by step.\n"
            "### END SOLUTION")


def answer_cell(question: str) -> dict:
    """The "Your derivation" cell as nbformat's v4 dict: an nbgrader manually graded answer."""
    return {"cell_type": "markdown", "id": "derivation-answer", "source": answer_source(question),
            "metadata": {"nbgrader": {"grade": True, "solution": True, "locked": False,
                                      "points": ANSWER_POINTS, "grade_id": ANSWER_GRADE_ID,
                                      "schema_version": 3}}}


def answer_position(cells: list) -> int | None:
    """Where the answer cell belongs: before the first derivation cell (None: no derivation)."""
    return next((i for i, c in enumerate(cells) if DERIVATION in tags(c)), None)


def cut_interview(source: str, question: str) -> str:
    """The stub's interview cell: its heading, the question, and one line to rehearse it."""
    paragraphs = re.split(r"\n\s*\n", source.strip())
    kept = [p for p in paragraphs if p.lstrip().startswith("#") or p.lstrip().startswith("**The question.**")]
    kept.append(f"Answer it aloud first, as you would in the room; then run `grade interview {question}`.")
    return "\n\n".join(kept)


AFTER_SOLVING = re.compile(r"^\s*#+\s*(?:where to go next|on a gpu\b|why this question has no cuda)",
                           re.I)


def after_solving_pointer(source: str, question: str) -> str:
    """The stub's "after solving" section: its heading, and where the reference is once solved."""
    heading = source.strip().splitlines()[0].strip()
    return (f"{heading}\n\nOnce every check passes, `grade start {question} --solution` copies the "
            "reference solution beside your notebook, with its Numba CUDA kernels where the question "
            "has them, each with a header that says what it does and why.")


def is_after_solving(cell: dict) -> bool:
    return cell.get("cell_type") == "markdown" and bool(AFTER_SOLVING.match(_source(cell)))


def is_visible_test(cell: dict) -> bool:
    meta = _nbgrader(cell)
    return (cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")
            and meta.get("grade_id") != "hidden_checks" and "hidden-checks" not in tags(cell))


def goes_on_in_run_all(cell: dict) -> bool:
    """Cells that may fail while the learner works: every code cell but "Grade it" itself (the
    learner's own code cells above all: a syntax error, an exception while defining, an
    undefined name), so that Run All always reaches the grade, which reports the error."""
    return cell.get("cell_type") == "code" and _nbgrader(cell).get("grade_id") != _SELF_GRADE_ID


def to_stub_layout(nb, question: str, keep_nbgrader_cells: bool = False):
    """Apply the stub layout to a solution notebook (an nbformat node, changed in place and
    returned), before nbgrader's preprocessors clear the solutions. ``keep_nbgrader_cells``
    (in a course) keeps a tagged cell that nbgrader grades: autograde needs every one."""
    kept = []
    for cell in nb.cells:
        cell_tags = tags(cell)
        graded = bool(_nbgrader(cell).get("grade") or _nbgrader(cell).get("solution"))
        if (DERIVATION in cell_tags or SOLUTION_ONLY in cell_tags) and not (keep_nbgrader_cells and graded):
            continue
        if INTERVIEW in cell_tags and cell.cell_type == "markdown":
            cell.source = cut_interview(cell.source, question)
        elif is_after_solving(cell):
            cell.source = after_solving_pointer(cell.source, question)
        if goes_on_in_run_all(cell) and RUN_ALL_GOES_ON not in cell_tags:
            cell.metadata["tags"] = [*cell_tags, RUN_ALL_GOES_ON]
        kept.append(cell)
    nb.cells = kept
    return nb


def sync_answer_cell(solution, question: str, write: bool = True) -> bool:
    """Give the solution notebook its "Your derivation" cell before its first derivation cell
    (none when it has no derivation yet). Returns whether it was missing or misplaced; with
    ``write`` the notebook is rewritten (read just before, to keep others' edits)."""
    import nbformat
    nb = nbformat.read(str(solution), as_version=4)
    current = next((c for c in nb.cells if is_answer_cell(c)), None)
    others = [c for c in nb.cells if c is not current]
    where = answer_position(others)
    if where is None:
        return False
    if current is not None and nb.cells.index(current) == where:
        return False
    if write:
        cell = current or nbformat.from_dict(answer_cell(question))
        if current is None and nb.nbformat_minor < 5:  # cell ids came with nbformat 4.5
            cell.pop("id")
        others.insert(where, cell)
        nb.cells = others
        nbformat.write(nb, str(solution))
    return True
