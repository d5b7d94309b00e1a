"""Reading code out of a notebook, without importing nbformat.

The ``.ipynb`` format is plain JSON. ``import nbformat`` costs about a second on a small
machine (jsonschema's format validators compile a grammar at import), which would double
the learner's ``grade`` time, so the grade path reads the JSON itself and leaves nbformat
to the tools that write notebooks (release, tests).

Which cells count as the learner's code:
- nbgrader test cells (``metadata.nbgrader.grade`` true and not a solution) never do;
  hidden checks live in the grader, visible tests are for the learner's own kernel.
- cells tagged ``demo`` (plots, training demos) never do: they are slow and not graded.
- every other code cell does, learner-added cells included.
IPython magics (``%``, ``%%``) and shell lines (``!``) are commented out.
"""
from __future__ import annotations

import json
import re

SKIP_TAGS = frozenset({"demo"})
_MAGIC = re.compile(r"^(\s*)([%!])")


class NotebookError(ValueError):
    """The file is not a notebook we can read; the message is a sentence for the learner."""


def parse_notebook(text: str) -> dict:
    """Parse notebook JSON text into a dict, or raise NotebookError with a clear sentence."""
    if not text.strip():
        raise NotebookError("the notebook file is empty")
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as e:
        raise NotebookError(
            f"the notebook is not valid JSON (line {e.lineno}, column {e.colno}): "
            "was it saved completely? Re-save it from Jupyter") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError("the file is JSON but not a Jupyter notebook (no list of cells)")
    return nb


def notebook_question(nb: dict) -> str | None:
    """The question id stored in the notebook's metadata, if any."""
    meta = nb.get("metadata")
    if isinstance(meta, dict):
        ours = meta.get("backprop_traps")
        if isinstance(ours, dict) and isinstance(ours.get("question"), str):
            return ours["question"]
    return None


def cell_source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def is_test_cell(cell: dict) -> bool:
    meta = cell.get("metadata") or {}
    nbg = meta.get("nbgrader") or {}
    return bool(nbg.get("grade")) and not nbg.get("solution")


def is_graded_code(cell: dict) -> bool:
    """Whether this cell is part of what gets graded (see the module docstring)."""
    if cell.get("cell_type") != "code" or is_test_cell(cell):
        return False
    tags = (cell.get("metadata") or {}).get("tags") or []
    return not SKIP_TAGS.intersection(tags)


def strip_magics(source: str) -> str:
    """Comment out IPython magics and shell escapes so the code is plain Python."""
    if source.lstrip().startswith("%%"):
        return "# (cell magic skipped by the grader)\n" + "\n".join(
            "# " + line for line in source.splitlines())
    return "\n".join(_MAGIC.sub(r"\1pass  # \2", line) for line in source.splitlines())


def graded_code(nb: dict) -> str:
    """The notebook's graded code cells joined into one Python source text."""
    parts = []
    for index, cell in enumerate(nb["cells"]):
        if isinstance(cell, dict) and is_graded_code(cell):
            parts.append(f"# --- cell {index} ---\n" + strip_magics(cell_source(cell)))
    return "\n\n".join(parts) + "\n"
