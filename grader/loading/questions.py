"""Where questions live, found by looking at the folders: no central list to edit.

A question ``<id>`` is ``solutions/NN_<id>.ipynb`` plus ``grader/checks/<id>.py``
(its hidden checks) plus ``kernels/<id>.py``. The root that holds ``solutions/`` and
``exercises/`` is the kit's own (``kit_root``: the repository in a clone, the package data
``grader/content/`` in an installed wheel) by default; ``--questions-dir`` or the environment
variable ``BACKPROP_TRAPS_QUESTIONS`` point at an instructor's own folder of the same layout.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The folder above ``grader/``: the repository in a clone (site-packages/backprop_traps once installed)."""
CONTENT_PACKAGE = "backprop_traps.grader.content"
ENV_VAR = "BACKPROP_TRAPS_QUESTIONS"
INTERVIEW_PAGE = Path("docs") / "interview.md"
"""Every interview answer on one page, in a questions folder (``authoring.interview.PAGE``)."""
_NOTEBOOK = re.compile(r"^(\d+)_([a-z][a-z0-9_]*)\.ipynb$")


def kit_root() -> Path:
    """The folder holding the kit's own ``solutions/`` and ``exercises/``: the package data of
    an installed wheel (``grader/content/``), else the repository of a clone or editable install."""
    from importlib.resources import files
    content = files(CONTENT_PACKAGE)
    if content.joinpath("solutions").is_dir():
        return Path(str(content))
    return REPO_ROOT


def questions_root(override: str | os.PathLike | None = None) -> Path:
    if override:
        return Path(override).resolve()
    env = os.environ.get(ENV_VAR)
    return Path(env).resolve() if env else kit_root()


def solution_notebooks(root: Path | None = None) -> dict[str, Path]:
    """Map question id -> its solution notebook, in the order of their numbers."""
    root = root or questions_root()
    found = []
    for path in (root / "solutions").glob("*.ipynb"):
        m = _NOTEBOOK.match(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    return {qid: path for _, qid, path in sorted(found)}


def solution_path(question: str, root: Path | None = None) -> Path:
    paths = solution_notebooks(root)
    if question not in paths:
        raise KeyError(question)
    return paths[question]


def exercise_path(question: str, root: Path | None = None) -> Path:
    sol = solution_path(question, root)
    return sol.parent.parent / "exercises" / sol.name


def kernel_path(question: str, root: Path | None = None) -> Path | None:
    """The question's Numba CUDA kernels, ``kernels/<id>.py``: in the questions folder, else the
    kit's own (the repository in a clone, the installed ``kernels`` package of a wheel)."""
    for folder in ((root or questions_root()) / "kernels", REPO_ROOT / "kernels"):
        if (folder / f"{question}.py").is_file():
            return folder / f"{question}.py"
    return None
