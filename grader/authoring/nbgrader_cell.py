"""The autograded cell that makes an nbgrader course grade with the kit's hidden checks.

Each solution notebook ends with one nbgrader test cell (``grade: true``, locked, points =
the question's full score, tag ``hidden-checks``) that calls
``backprop_traps.grader.nbgrader_bridge.run_hidden_checks``, followed by the two "Grade it" cells. The
kit's own ``grade`` never runs it (test cells are not graded); ``nbgrader autograde`` does,
and it grades the notebook file with ``grade``'s sandboxed path, so nbgrader records the
score ``grade`` gives. Outside nbgrader it prints one line: "Grade it" prints the one report.
``grade release`` keeps the cell in line with the question's checks: added when missing,
points and source updated when they change, moved before the "Grade it" cells if it sits
after them.
"""
from __future__ import annotations

from pathlib import Path

TAG = "hidden-checks"
GRADE_ID = "hidden_checks"


def cell_source(question: str) -> str:
    return ("# nbgrader autograde: grades this notebook file exactly as `grade` does (the same sandbox)\n"
            "# and records the score. Outside nbgrader it grades nothing: \"Grade it\" below does.\n"
            "from backprop_traps.grader.nbgrader_bridge import run_hidden_checks\n"
            f"run_hidden_checks({question!r}, globals())")


def make_cell(question: str, points: float):
    import nbformat
    cell = nbformat.v4.new_code_cell(cell_source(question))
    cell.metadata = {"nbgrader": {"grade": True, "solution": False, "locked": True,
                                  "points": _points(points), "grade_id": GRADE_ID,
                                  "schema_version": 3}, "tags": [TAG]}
    cell["id"] = "hidden-checks"  # deterministic: regenerating the notebook changes nothing
    return cell


def _points(points: float):
    return int(points) if float(points).is_integer() else float(points)


def _before_self_grade(nb) -> int:
    """Where a missing hidden-checks cell goes: before the closing "Grade it" cells."""
    from backprop_traps.grader.notebook_grade import GRADE_ID as SELF_GRADE
    for i, cell in enumerate(nb.cells):
        if (cell.get("metadata") or {}).get("nbgrader", {}).get("grade_id") == SELF_GRADE:
            previous = nb.cells[i - 1] if i else None
            heading = previous is not None and previous.cell_type == "markdown" and \
                previous.source.lstrip().startswith("## Grade it")
            return i - 1 if heading else i
    return len(nb.cells)


def find_cell(nb):
    """The notebook's hidden-checks cell, or None."""
    for cell in nb.cells:
        meta = cell.get("metadata") or {}
        if TAG in (meta.get("tags") or []) or (meta.get("nbgrader") or {}).get("grade_id") == GRADE_ID:
            return cell
    return None


def sync_cell(solution: Path, question: str, max_score: float | None, write: bool = True) -> bool:
    """Bring ``solution``'s hidden-checks cell in line with the question (``max_score`` None:
    the question has no checks yet, so leave the notebook alone). Returns whether it
    differed; with ``write`` the notebook is rewritten (read just before, to keep others' edits)."""
    if max_score is None:
        return False
    import nbformat
    nb = nbformat.read(str(solution), as_version=4)
    wanted = make_cell(question, max_score)
    cell = find_cell(nb)
    misplaced = cell is not None and nb.cells.index(cell) > _before_self_grade(nb)
    if cell is not None and not misplaced and cell.source == wanted.source and \
            cell.metadata.get("nbgrader") == wanted.metadata["nbgrader"]:
        return False
    if write:
        if cell is None:
            if nb.nbformat_minor < 5:  # cell ids came with nbformat 4.5
                wanted.pop("id")
            nb.cells.insert(_before_self_grade(nb), wanted)
        else:
            cell.source = wanted.source
            cell.metadata["nbgrader"] = wanted.metadata["nbgrader"]
            cell.metadata["tags"] = sorted(set(cell.metadata.get("tags") or []) | {TAG})
            if misplaced:  # one report, at the end: the autograded cell, then "Grade it"
                nb.cells.remove(cell)
                nb.cells.insert(_before_self_grade(nb), cell)
        nbformat.write(nb, str(solution))
    return True


def max_score_or_none(question: str, root: Path) -> float | None:
    """The question's full score, or None when it has no (loadable) checks module yet."""
    from backprop_traps.grader.checks import load_question
    try:
        return load_question(question, root).max_score
    except Exception:  # no checks yet, or a module still being written: not this tool's report
        return None
