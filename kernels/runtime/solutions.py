"""The solution notebooks, read as the kernels' CPU reference, with nothing from the grader.

kernels/ sits below grader/ and imports nothing from it (tests/kit/test_import_graph.py): the
kernels are the second implementation of each question, checked against the first, the
solution notebook. Reading one is small enough to do here. A notebook is plain JSON; its
reference code is its code cells in order, less nbgrader's test cells (``metadata.nbgrader``
``grade`` true and not a ``solution``) and the cells tagged ``demo`` (plots, training runs),
each headed ``# --- cell N ---`` (N counts every cell from 1), IPython magics commented out.
That is the text the grader's own loader runs (grader/loading/reference.py, through
grader/loading/notebook.py's ``graded_code``); tests/kit/test_solution_reader.py holds the two
to the same text and the same files for every question.

Where: the folder BACKPROP_TRAPS_QUESTIONS names (an instructor's, as for ``grade``), else the
kit's own ``solutions/``: package data beside the kernels in a wheel
(backprop_traps/grader/content/solutions, read as files, never imported), the repository's in a
checkout or an editable install. Trusted code only: the notebooks run in this process.
"""
from __future__ import annotations

import functools
import json
import os
import re
import types
from pathlib import Path

ENV_VAR = "BACKPROP_TRAPS_QUESTIONS"  # grader/loading/questions.py's, for an instructor's folder
_ABOVE = Path(__file__).resolve().parents[2]  # the repository, or site-packages/backprop_traps
_KIT_ROOTS = (_ABOVE / "grader" / "content", _ABOVE)  # a wheel's package data, then a checkout's
_NOTEBOOK = re.compile(r"^(\d+)_([a-z][a-z0-9_]*)\.ipynb$")
_MAGIC = re.compile(r"^(\s*)([%!])")


def solutions_folder() -> Path:
    """The ``solutions/`` folder the references come from."""
    chosen = os.environ.get(ENV_VAR)
    roots = (Path(chosen).resolve(),) if chosen else _KIT_ROOTS
    for root in roots:
        if (root / "solutions").is_dir():
            return root / "solutions"
    raise FileNotFoundError(f"no solutions/ folder in {', '.join(map(str, roots))}: the kernels' references "
                            f"are the solution notebooks ({ENV_VAR} names a questions folder)")


def notebook_path(question: str) -> Path:
    """``solutions/NN_<question>.ipynb``."""
    found = [p for p in solutions_folder().glob("*.ipynb")
             if (m := _NOTEBOOK.match(p.name)) and m.group(2) == question]
    if len(found) != 1:
        raise KeyError(question)
    return found[0]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _is_reference(cell: dict) -> bool:
    meta = cell.get("metadata") or {}
    nbgrader = meta.get("nbgrader") or {}
    test_cell = bool(nbgrader.get("grade")) and not nbgrader.get("solution")
    return cell.get("cell_type") == "code" and not test_cell and "demo" not in (meta.get("tags") or [])


def _without_magics(source: str) -> str:
    if source.lstrip().startswith("%%"):  # a cell magic: none of the cell runs
        return "# (cell magic skipped by the grader)\n" + "\n".join("# " + line for line in source.splitlines())
    return "\n".join(_MAGIC.sub(r"\1pass  # \2", line) for line in source.splitlines())


def reference_code(path: Path) -> str:
    """The notebook's reference code, as one Python source text."""
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    parts = [f"# --- cell {n} ---\n" + _without_magics(_source(cell))
             for n, cell in enumerate(cells, 1) if isinstance(cell, dict) and _is_reference(cell)]
    return "\n\n".join(parts) + "\n"


@functools.lru_cache(maxsize=None)
def _load(path: str) -> types.SimpleNamespace:
    namespace: dict = {"__name__": f"reference_{Path(path).stem}"}
    exec(compile(reference_code(Path(path)), path, "exec"), namespace)
    return types.SimpleNamespace(**{k: v for k, v in namespace.items() if not k.startswith("__")})


def load_solution(question: str) -> types.SimpleNamespace:
    """The solution's functions for ``question`` as attributes (``ref.maxpool2d_forward``)."""
    return _load(str(notebook_path(question)))
