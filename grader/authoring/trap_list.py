"""The solution's list of mistakes against the hidden checks' traps: `grade validate` fails a
question whose notebook names a trap the checks do not know, or leaves one out.

The list is the markdown cell that starts "## The mistakes the grader ..." (issue 22 tags it
``solution-only``), one bullet per trap, the id first in bold: ``- **avg-routing**: ...``.
"""
from __future__ import annotations

import re
from pathlib import Path

_HEADING = re.compile(r"^##\s+The mistakes the grader\b", re.IGNORECASE)
_BULLET = re.compile(r"^\s*[-*]\s+\*\*`?([a-z0-9][a-z0-9_-]*)`?\*\*", re.MULTILINE)


def listed_traps(solution: Path) -> list[str] | None:
    """The trap ids the solution's mistakes cell lists, in order; None without such a cell."""
    import nbformat
    nb = nbformat.read(str(solution), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and _HEADING.match(cell.source.lstrip()):
            return _BULLET.findall(cell.source)
    return None


def check_trap_list(report, question: str, root: Path) -> None:
    """Add one finding: the notebook's list of traps is the checks' list, or what differs."""
    from backprop_traps.grader.authoring.findings import FAIL, OK
    from backprop_traps.grader.checks import load_question
    from backprop_traps.grader.loading.questions import solution_path

    try:
        known = [t.id for t in load_question(question, root).traps]
    except ModuleNotFoundError:
        return  # no hidden checks: the soundness step already says so
    listed = listed_traps(solution_path(question, root))
    if listed is None:
        report.add(FAIL, "the solution has no \"## The mistakes the grader names\" cell listing the "
                         f"checks' traps ({', '.join(known) or 'none'})")
        return
    missing, unknown = [t for t in known if t not in listed], [t for t in listed if t not in known]
    if missing or unknown:
        details = ([f"the checks name, the notebook does not list: {', '.join(missing)}"] if missing else []) + \
                  ([f"the notebook lists, no check names: {', '.join(unknown)}"] if unknown else [])
        report.add(FAIL, "the notebook's list of mistakes differs from the checks' traps", details)
    else:
        report.add(OK, f"the notebook lists exactly the checks' {len(known)} traps")
