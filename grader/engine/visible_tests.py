"""The notebook's visible tests (nbgrader ``grade: true`` cells), run in the sandbox.

They are the learner's quick sanity checks and are never scored: the report counts them
apart from the hidden checks so that "all visible tests pass" can never read as "done".
They run in the same child as the hidden checks, after the learner's code, in its
namespace, exactly as they would in the notebook.
"""
from __future__ import annotations

from pathlib import Path

from backprop_traps.grader.loading.notebook import SKIP_TAGS, cell_source, is_test_cell, strip_magics
from backprop_traps.grader.loading.submission import read_notebook
from backprop_traps.grader.engine.results import VisibleTests

# Not the learner's sanity checks: demos, and the nbgrader cell that runs the hidden checks
# in a course's kernel (grader/authoring/nbgrader_cell.py); the sandbox cannot import the kit.
NOT_VISIBLE_TESTS = SKIP_TAGS | {"hidden-checks"}


def _notebook(path: str | Path, nb: dict | None) -> dict | None:
    """The learner's notebook: ``nb`` as the grading parsed it (``Submission.notebook``), else
    read from ``path`` the bounded way; None for a .py or a bad file."""
    if nb is not None:
        return nb
    if Path(path).suffix != ".ipynb":
        return None
    try:
        return read_notebook(path)  # bounded: the learner's file
    except ValueError:  # unreadable, not UTF-8, not a notebook
        return None


def test_cells(path: str | Path, nb: dict | None = None) -> list[tuple[str, str]]:
    """``(name, source)`` of each visible test cell of a notebook (``nb``, the notebook already
    parsed, or the file at ``path``); [] for a .py or a bad file."""
    nb = _notebook(path, nb)
    if nb is None:
        return []
    cells = []
    for index, cell in enumerate(nb["cells"]):
        if not (isinstance(cell, dict) and cell.get("cell_type") == "code" and is_test_cell(cell)):
            continue
        meta = cell.get("metadata") or {}
        grade_id = (meta.get("nbgrader") or {}).get("grade_id")
        if NOT_VISIBLE_TESTS.intersection(meta.get("tags") or []) or grade_id == "hidden_checks":
            continue
        name = grade_id or f"cell {index}"
        cells.append((str(name), strip_magics(cell_source(cell))))
    return cells


def _describe(name: str, source: str, outcome: dict) -> str:
    kind = outcome.get("type", "an exception")
    if kind == "NotImplementedError":
        return f"{name}: not implemented yet"
    text = f"{name}: {kind}"
    if outcome.get("message"):
        text += f": {outcome['message']}"
    line = outcome.get("line")
    lines = source.splitlines()
    if isinstance(line, int) and 1 <= line <= len(lines):
        text += f" (line {line}: `{lines[line - 1].strip()[:80]}`)"
    return text


def run_visible_tests(sandbox, path: str | Path, nb: dict | None = None) -> VisibleTests | None:
    """Run the notebook's visible tests in ``sandbox``; None when it has none (a .py file).
    ``nb``: the notebook as the grading parsed it (else the file is read)."""
    cells = test_cells(path, nb)
    if not cells:
        return None
    result = sandbox.run_cells([source for _, source in cells])
    if not result.ok:
        return VisibleTests(0, len(cells), error=result.error)
    outcomes = result.value if isinstance(result.value, list) else []
    if len(outcomes) != len(cells):
        return VisibleTests(0, len(cells), error="the visible tests gave an unreadable answer")
    failures = [_describe(name, source, o if isinstance(o, dict) else {})
                for (name, source), o in zip(cells, outcomes)
                if not (isinstance(o, dict) and o.get("ok") is True)]
    return VisibleTests(len(cells) - len(failures), len(cells), failures)


def manual_cells(path: str | Path, nb: dict | None = None) -> list[str]:
    """The headings of a notebook's manually graded answer cells (nbgrader markdown cells with
    solution and grade metadata, e.g. "Your derivation"): `grade` lists them as not
    auto-graded and never scores them. ``nb``: the notebook already parsed (else ``path``)."""
    nb = _notebook(path, nb)
    if nb is None:
        return []
    found = []
    for cell in nb["cells"]:
        meta = (cell.get("metadata") or {}).get("nbgrader") if isinstance(cell, dict) else None
        if cell.get("cell_type") == "markdown" and isinstance(meta, dict) and meta.get("grade") \
                and meta.get("solution"):
            first = cell_source(cell).strip().splitlines()[:1]
            found.append(first[0].lstrip("#").strip() if first else str(meta.get("grade_id", "answer")))
    return found
