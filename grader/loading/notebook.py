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

``graded_cells`` gives them one by one, as the sandbox loads them ("Run All", past errors):
each cell as written, and a fallback with IPython syntax blanked, used only when the cell
as written is not Python. In the fallback a line magic (``%load_ext``), a shell line
(``!pip``, ``x = !ls``) or a help line (``np.zeros?``) becomes ``pass`` (or ``x = None``): a
shell command never runs. A cell magic that runs its body as Python (``%%time``,
``%%capture``) keeps the body; any other (``%%bash``, ``%%writefile``, ``%%timeit``) blanks
the whole cell. Line numbers never move.
"""
from __future__ import annotations

import json
import re

SKIP_TAGS = frozenset({"demo"})
_MAGIC = re.compile(r"^(\s*)([%!])")
_ASSIGNED_MAGIC = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[%!]")
_HELP = re.compile(r"^(\s*)(\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")
CELL_MAGICS_RUNNING_PYTHON = frozenset({"time", "capture", "prun"})


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


def without_ipython(source: str) -> str:
    """``source`` with IPython syntax blanked line for line (see the module docstring)."""
    lines = source.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].strip()[2:].split(maxsplit=1)[0] if lines[first].strip()[2:].split() else ""
        if name not in CELL_MAGICS_RUNNING_PYTHON:
            return "\n".join("# " + line for line in lines)  # not Python: nothing of it runs
        lines[first] = "# " + lines[first]
    out = []
    for line in lines:
        indent = line[:len(line) - len(line.lstrip())]
        assigned = _ASSIGNED_MAGIC.match(line)
        if assigned:
            out.append(f"{indent}{assigned.group(2)} = None  # {line.strip()}")
        elif _MAGIC.match(line) or _HELP.match(line):
            out.append(f"{indent}pass  # {line.strip()}")
        else:
            out.append(line)
    return "\n".join(out)


def graded_cells(nb: dict) -> list[tuple[str, str, str]]:
    """The graded code cells, in order, as ``(label, source, fallback)``: ``label`` is
    "cell N" (N counts every cell from the top, from 1), ``fallback`` the source with
    IPython syntax blanked (``without_ipython``)."""
    cells = []
    for index, cell in enumerate(nb["cells"]):
        if isinstance(cell, dict) and is_graded_code(cell):
            source = cell_source(cell)
            cells.append((f"cell {index + 1}", source, without_ipython(source)))
    return cells


def graded_code(nb: dict) -> str:
    """The notebook's graded code cells joined into one Python source text (for trusted
    code, e.g. the reference; a learner's notebook is loaded cell by cell instead)."""
    parts = [f"# --- {label} ---\n" + strip_magics(source) for label, source, _ in graded_cells(nb)]
    return "\n\n".join(parts) + "\n"
