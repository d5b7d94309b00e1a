"""Grade a notebook from inside itself: the last cell of every stub runs

    from backprop_traps.grader.notebook_grade import grade_this_notebook
    grade_this_notebook("routing_trap")

and prints the same report as `grade FILE`, through the same sandboxed path: the hidden
checks run in a child process against the notebook *file*, never against this kernel's
live objects. That cell is tagged ``demo``, so grading skips it (no recursion).

It reads the notebook as saved on disk and never saves it: Jupyter keeps your edits in
the browser until you save, so save first (Ctrl-S). When the saved cells differ from the
code this kernel ran last (a cell never run as saved, or a function the kernel holds from an
edited, unsaved version of its cell: grader/notebook_kernel.py), the report leads with that, in
words, shows the saved file's checks in grey and gives no score, never "full marks".
In a notebook the report is HTML (grader/learner/report_html.py: colour, wrapped by the
browser, cells named as JupyterLab numbers them), with `grade`'s own text as its fallback;
``hint=True`` and ``solution=True`` do what `grade FILE --hint` and `grade start ID
--solution` do in a terminal.

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


def stale_cells(path: Path) -> list[str]:
    """What of the saved notebook is not what this kernel ran, one phrase per cell: a graded cell
    never run as saved ("not run as saved"), or one whose definitions the kernel holds from an
    edited, unsaved text (``notebook_kernel``: what a cell ran *last*, not whether its saved text
    ever ran). Empty outside IPython."""
    ip = _kernel()
    nb = _read(path)
    if ip is None or nb is None:
        return []
    from backprop_traps.grader.notebook_kernel import edited_cells
    phrases = {src: f"`{_first_line(src)}` was not run as saved" for src in not_run(path, executed_cells())}
    code = [c for c in nb["cells"] if isinstance(c, dict) and c.get("cell_type") == "code"]
    graded = [cell_source(c).strip() for c in code if is_graded_code(c)]
    for cell in edited_cells([g for g in graded if g], [cell_source(c) for c in code], ip):
        names = ", ".join(f"`{n}`" for n in cell.names)
        when = f" (in [{cell.run}])" if cell.run else ""
        phrases[cell.source] = (f"{names} {'is' if len(cell.names) == 1 else 'are'} this kernel's from an "
                                f"edited, unsaved version of its cell{when}")  # one phrase a cell
    return [phrases[src] for src in graded if src in phrases]


def _first_line(source: str) -> str:
    first = source.strip().splitlines()[0] if source.strip() else ""
    return first[:60] + ("..." if len(first) > 60 else "")


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


def cell_numbers(path: Path) -> dict[int, str]:
    """{place of each code cell in the saved file (1-based, as `grade` counts): how JupyterLab
    shows it}: "[4]", the execution count of its latest run in this kernel, or "[ ]" with its
    first line when this kernel has not run it as saved."""
    nb = _read(path)
    if nb is None:
        return {}
    history = getattr(getattr(_kernel(), "history_manager", None), "input_hist_raw", None) or []
    latest = {src.strip(): n for n, src in enumerate(history) if isinstance(src, str) and src.strip()}
    numbers = {}
    for index, cell in enumerate(nb["cells"], 1):
        if not (isinstance(cell, dict) and cell.get("cell_type") == "code"):
            continue
        source = cell_source(cell).strip()
        if source in latest:
            numbers[index] = f"[{latest[source]}]"
        else:
            first = source.splitlines()[0][:40] if source else ""
            numbers[index] = f"[ ] (not run as saved: `{first}`)"
    return numbers


def _display(text: str, html: str | None) -> None:
    """The report: HTML in a notebook, with ``text`` (what `grade` prints) as its fallback."""
    if html is not None and _kernel() is not None:
        try:
            from IPython.display import display
            display({"text/plain": text, "text/html": html}, raw=True)
            return
        except Exception:  # noqa: BLE001 (no rich display here: the text is the report)
            pass
    print(text)


def grade_this_notebook(question: str | None = None, path: str | os.PathLike | None = None,
                        seed: int | None = None, hint: bool = False, solution: bool = False) -> None:
    """Grade this notebook as saved on disk and show the report (see the module docstring):
    HTML in JupyterLab, the terminal's text elsewhere. ``hint=True`` also shows the next hint for
    the first failing check (as `grade FILE --hint`); ``solution=True``, once every hidden check
    passes, copies the reference solution and its kernels next to this notebook."""
    if os.environ.get("NBGRADER_EXECUTION"):
        # Inside `nbgrader autograde`/`validate` the course's own test cells grade; grading
        # the file again here would only cost time (and write to the learner's folder).
        print("(nbgrader is running this notebook: its autograded cells do the grading)")
        return
    from backprop_traps.grader.learner.after_grading import after_grading
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.learner.report import render
    from backprop_traps.grader.learner.report_html import notebook_follow_up, render_html
    from backprop_traps.grader.loading.questions import solution_notebooks

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
    shown = _relative(notebook)  # as `grade` run in this folder names it
    stale = stale_cells(notebook)
    lead = stale_sentence(stale, shown)
    result = grade_path(shown, question=question, seed=seed, visible_tests=True)
    text = render(result, color=False, stale=bool(stale))
    kit_solution = notebook.resolve() in {p.resolve() for p in solution_notebooks().values()}
    follow_up = ""
    if not kit_solution:  # the reference grading itself is not the learner's score
        follow_up = after_grading([result], want_hint=hint, color=False, pointers=not stale)
    if solution and not kit_solution:
        follow_up = "\n\n".join(filter(None, [follow_up, _solution_copy(result, notebook, stale)]))
    plain = "\n\n".join(filter(None, [lead, text, follow_up]))
    numbers = cell_numbers(notebook) if _kernel() is not None else {}
    html = render_html(result, shown, numbers, lead,
                       notebook_follow_up(follow_up, shown, result.question))
    _display(plain, html)


def stale_sentence(stale: list[str], shown: str) -> str:
    """The sentence that leads the report when the saved file is not the code this kernel ran."""
    if not stale:
        return ""
    from backprop_traps.grader.sandbox.inert import inert  # the path came from the front end
    cells = "1 of its code cells is" if len(stale) == 1 else f"{len(stale)} of its code cells are"
    return (f"This grades {inert(shown)} as saved on disk, but {cells} not what this kernel ran "
            f"({inert('; '.join(stale), 600)}): the checks below are the saved file's, not what you see "
            "above, and give no score. Save the notebook (Ctrl-S), run the cells, then run this cell again.")


def _relative(notebook: Path) -> str:
    """The notebook's path relative to the kernel's folder (its own folder in Jupyter)."""
    try:
        return os.path.relpath(notebook)
    except ValueError:  # another drive
        return str(notebook)


def _solution_copy(result, notebook: Path, stale: list[str]) -> str:
    """`grade_this_notebook(solution=True)`: the copy, or why not yet."""
    from backprop_traps.grader.learner.next_steps import copy_solution
    if result.error or result.question is None:
        return "No solution copy: this notebook could not be graded (see above)."
    if stale:
        return ("No solution copy: the saved file is not what this kernel ran. Save it and grade again.")
    if result.score < result.max_score:  # this grading decides, whatever an earlier one scored
        return (f"Not yet: the reference solution of {result.question} is copied only once every hidden "
                f"check passes, and this notebook scores {result.score:g} / {result.max_score:g} points. "
                f"Keep going (`grade_this_notebook(hint=True)` gives a hint); `grade reveal "
                f"{result.question}` in a terminal shows the derivation one step at a time.")
    try:
        return "\n".join(copy_solution(result.question, None, notebook.resolve().parent))
    except OSError as e:
        return f"Could not copy the reference solution next to this notebook: {e.strerror or e}."


GRADE_ID = "grade_this_notebook"
_GRADE_IT = ("## Grade it\n\nSave the notebook (Ctrl-S), then run the cell below (Run All ends here, "
             "past any error above: every code cell carries the tag `raises-exception`). It grades the "
             "saved file with the hidden checks and shows the report here; it says so first when the saved "
             "file is not what this kernel ran. `grade_this_notebook(hint=True)` adds a hint for the first "
             "failing check, `grade_this_notebook(solution=True)` copies the reference solution here once "
             "every check passes. In a terminal, `grade <this notebook>` does the same.")


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
