"""Grade a notebook from inside itself: the last cell of every stub runs

    from backprop_traps.grader.notebook_grade import grade_this_notebook
    grade_this_notebook("routing_trap")

and prints the same report as `grade FILE`, through the same sandboxed path: the hidden
checks run in a child process against the notebook *file*, never against this kernel's
live objects. That cell is tagged ``demo``, so grading skips it (no recursion).

It reads the notebook as saved on disk and never saves it: Jupyter keeps your edits in
the browser until you save, so save first (Ctrl-S). When the saved cells differ from the
code this kernel ran, it says so.

A kernel has no ``__file__``, so the notebook is found in this order:
1. ``path=...``, when given;
2. what the front end tells the kernel: ``JPY_SESSION_NAME`` (Jupyter Server 2 and later
   set it to the notebook's path, relative to the server's root), ipykernel's
   ``__session__``, or VS Code's ``__vsc_ipynb_file__``;
3. among several notebooks of the question in the kernel's working folder (a Jupyter
   "Duplicate" such as ``NN_<id>-Copy1.ipynb`` beside the original), the one whose graded
   cells this kernel ran as they are saved (the newest file if several match);
   then ``NN_<id>.ipynb`` there (Jupyter starts a kernel in the notebook's folder; `grade
   start` and ``exercises/`` use that name);
4. the one notebook in that folder whose metadata names the question;
5. the kit's own notebook for the question (solution or stub) when this kernel has run
   every one of its graded cells verbatim (e.g. a solution executed from another folder).
"""
from __future__ import annotations

import os
from pathlib import Path

from backprop_traps.grader.loading.notebook import cell_source, is_graded_code, notebook_question


def _kernel():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def executed_cells() -> set[str]:
    """The raw source of every cell this IPython kernel has run (empty outside IPython)."""
    ip = _kernel()
    history = getattr(getattr(ip, "history_manager", None), "input_hist_raw", None) or []
    return {src.strip() for src in history if isinstance(src, str) and src.strip()}


def _read(path: Path) -> dict | None:
    from backprop_traps.grader.loading.submission import read_notebook
    try:
        return read_notebook(path)  # bounded: the learner's file
    except ValueError:  # unreadable, not UTF-8, not a notebook
        return None


def not_run(path: Path, executed: set[str]) -> list[str]:
    """The graded code cells of the saved notebook that this kernel has not run as they are."""
    nb = _read(path)
    if nb is None:
        return []
    cells = [cell_source(c).strip() for c in nb["cells"] if isinstance(c, dict) and is_graded_code(c)]
    return [src for src in cells if src and src not in executed]


def _from_front_end() -> Path | None:
    """The notebook path the front end gave the kernel. Jupyter Server's ``JPY_SESSION_NAME``
    (and ipykernel's ``__session__``) may be relative to the server's root folder, which is
    the kernel's folder or one above it, so those are tried in turn."""
    ns = getattr(_kernel(), "user_ns", None) or {}
    names = [os.environ.get("JPY_SESSION_NAME"), ns.get("__session__"), ns.get("__vsc_ipynb_file__")]
    here = Path.cwd()
    for name in names:
        if not (isinstance(name, str) and name.endswith(".ipynb")):
            continue
        path = Path(name)
        for candidate in [path] if path.is_absolute() else [here / path] + [p / path for p in here.parents]:
            if candidate.is_file():
                return candidate
    return None


def find_notebook(question: str | None = None, path: str | os.PathLike | None = None) -> Path | None:
    """The notebook to grade (see the module docstring for the order), or None."""
    if path is not None:
        return Path(path)
    found = _from_front_end()
    if found is not None and (question is None or notebook_question(_read(found) or {}) == question):
        return found
    if question is None:
        return None
    from backprop_traps.grader.loading.questions import exercise_path, solution_notebooks, solution_path
    if question not in solution_notebooks():
        return None
    name = solution_path(question).name
    here = Path.cwd()
    mine = [p for p in sorted(here.glob("*.ipynb")) if notebook_question(_read(p) or {}) == question]
    executed = executed_cells()
    ran = [p for p in mine if executed and not not_run(p, executed)]
    if ran and len(mine) > 1:  # a copy (Jupyter's "Duplicate": NN_<id>-Copy1.ipynb) grades itself
        return max(ran, key=lambda p: p.stat().st_mtime_ns)
    if (here / name).is_file():
        return here / name
    if len(mine) == 1:
        return mine[0]
    for kit in (solution_path(question), exercise_path(question)):
        if executed and kit.is_file() and not not_run(kit, executed):
            return kit
    return None


def grade_this_notebook(question: str | None = None, path: str | os.PathLike | None = None,
                        seed: int | None = None) -> None:
    """Grade this notebook as saved on disk and print the report (see the module docstring)."""
    if os.environ.get("NBGRADER_EXECUTION"):
        # Inside `nbgrader autograde`/`validate` the course's own test cells grade; grading
        # the file again here would only cost time (and write to the learner's folder).
        print("(nbgrader is running this notebook: its autograded cells do the grading)")
        return
    from backprop_traps.grader.commands.learner import after_grading
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.loading.questions import solution_notebooks
    from backprop_traps.grader.learner.report import render

    notebook = find_notebook(question, path)
    if notebook is None:
        print("Could not tell which file this notebook is. Save it, then pass its path, e.g.\n"
              f"    grade_this_notebook({question!r}, path='01_routing_trap.ipynb')\n"
              "or grade it from a terminal: grade <your notebook>.ipynb")
        return
    from backprop_traps.grader.sandbox.inert import inert  # the path came from the front end
    if not notebook.is_file():
        print(f"There is no notebook at {inert(notebook)}; pass the path of this notebook's file.")
        return
    print(f"Grading {inert(notebook)} as saved on disk (unsaved edits are not seen: save first, Ctrl-S).")
    stale = not_run(notebook, executed_cells()) if _kernel() is not None else []
    if stale:
        print(f"Note: {len(stale)} code cell(s) of the saved file are not what this kernel ran. If you "
              "edited them, save the notebook and run this cell again.")
    result = grade_path(notebook, question=question, seed=seed, visible_tests=True)
    print(render(result, color=False))
    kit_solution = notebook.resolve() in {p.resolve() for p in solution_notebooks().values()}
    if not kit_solution:  # the reference grading itself is not the learner's score
        follow_up = after_grading([result], want_hint=False, color=False)
        if follow_up:
            print("\n" + follow_up)


GRADE_ID = "grade_this_notebook"
_GRADE_IT = ("## Grade it\n\nRun the cell below after saving the notebook: it runs the hidden checks "
             "on the saved file and shows the report here. In a terminal, `grade <this notebook>` "
             "does the same, and `--hint` gives a hint for the first failing check. Run All reaches "
             "this cell even when a visible test above fails (those cells carry the tag "
             "`raises-exception`); if your editor stops at a failing test anyway, run this cell on its own.")


def self_grade_cells(question: str) -> list:
    """The two cells every notebook ends with ("Grade it" and the cell that grades the saved
    file), for `grade new`. Tagged ``demo``: `grade` itself never runs them."""
    import nbformat
    code = nbformat.v4.new_code_cell(
        "# Grade this notebook with the hidden checks, from here (the same sandboxed grader as\n"
        "# `grade FILE` in a terminal). It reads the notebook file: save it first (Ctrl-S).\n"
        "from backprop_traps.grader.notebook_grade import grade_this_notebook\n"
        f"grade_this_notebook({question!r})",
        metadata={"nbgrader": {"grade": False, "grade_id": GRADE_ID, "locked": True,
                               "schema_version": 3, "solution": False}, "tags": ["demo"]})
    return [nbformat.v4.new_markdown_cell(_GRADE_IT), code]
