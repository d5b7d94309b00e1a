"""The reference implementation of a question is its solution notebook itself.

The grader (a trusted process) executes the solution notebook's graded code cells into a
fresh namespace; hidden checks and kernel tests compare against those functions, so the
math is never written a third time.
"""
from __future__ import annotations

import functools
import types
from pathlib import Path

from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
from backprop_traps.grader.loading.questions import solution_path


@functools.lru_cache(maxsize=None)
def _load(path: str) -> types.SimpleNamespace:
    text = Path(path).read_text(encoding="utf-8")
    namespace: dict = {"__name__": f"reference_{Path(path).stem}"}
    exec(compile(graded_code(parse_notebook(text)), path, "exec"), namespace)
    return types.SimpleNamespace(**{k: v for k, v in namespace.items() if not k.startswith("__")})


def load_solution(question: str, root: Path | None = None) -> types.SimpleNamespace:
    """The solution's functions for ``question`` as attributes (e.g. ``ref.maxpool2d_forward``)."""
    return _load(str(solution_path(question, root)))


def setup_code(question: str, root: Path | None = None) -> str:
    """The source of the solution's setup cell (nbgrader grade_id ``setup``), or "" if none:
    the helpers a question with ``grader_setup`` runs after the learner's code."""
    from backprop_traps.grader.loading.notebook import cell_source
    nb = parse_notebook(solution_path(question, root).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id") == "setup":
            return cell_source(cell)
    return ""
