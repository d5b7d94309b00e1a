"""What a notebook's autograded cell calls, so an nbgrader course grades exactly as ``grade``.

The hidden-checks cell of every solution notebook (an nbgrader test cell, locked, worth the
question's full score) runs::

    from backprop_traps.grader.nbgrader_bridge import run_hidden_checks
    run_hidden_checks("routing_trap", globals())

Under ``nbgrader autograde`` (or ``validate``), it grades the notebook *file* nbgrader is
running, with ``grade``'s own sandboxed path (``grade_path``): the same cells, the same
child process and limits, the same memory measurement, so the score it returns (nbgrader's
partial credit) is exactly what ``grade`` gives that file. nbgrader runs the notebook in its
own folder, so the file is found there (``notebook_grade.find_notebook``: ``NN_<id>.ipynb``,
or the one notebook whose metadata names the question). Should it not be found, the cells
this kernel ran (IPython's input history) are graded in the sandbox instead; outside
IPython, as a last resort, the functions in ``namespace`` are checked in this process.

Outside nbgrader the cell prints one line and grades nothing: the notebook's "Grade it"
cell, at the very end, prints the one report.
"""
from __future__ import annotations

import os
import warnings

NOTE = "  (graded by the same sandboxed grader as `grade <notebook>`)"
NOTE_IN_PROCESS = ("  (run inside this kernel, without the sandbox: the notebook file was not found; "
                   "`grade <notebook>` runs the same checks isolated)")
NOTE_HISTORY = ("  (graded in the sandbox from the cells this kernel ran: the notebook file was not "
                "found; `grade <notebook>` grades the file itself)")
OUTSIDE = ("(This cell is for nbgrader's autograder and grades nothing here: the \"Grade it\" cell "
           "at the end of the notebook grades it.)")


def inside_nbgrader() -> bool:
    """Whether ``nbgrader autograde`` or ``nbgrader validate`` is running this kernel."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def run_hidden_checks(question: str, namespace: dict, seed: int | None = None, root=None,
                      all_or_nothing: bool = False, path=None) -> float | None:
    """Grade this notebook for nbgrader: print ``grade``'s report and return its score
    (nbgrader's partial credit). Outside nbgrader, without ``path``, print one line and
    return None (the "Grade it" cell reports).

    ``path``: the notebook file to grade (default: found in the kernel's folder).
    ``root``: the questions folder (default: ``BACKPROP_TRAPS_QUESTIONS`` or this kit).
    ``all_or_nothing``: raise AssertionError with the report unless every check passes.
    """
    if path is None and not inside_nbgrader():
        print(OUTSIDE)
        return None
    from backprop_traps.grader.learner.report import render

    with warnings.catch_warnings():  # a cell with anything on stderr gets 0 from nbgrader
        warnings.simplefilter("ignore")
        result, note = _grade(question, namespace, seed, root, path)
    report = render(result, color=False) + "\n" + note
    print(report)
    if all_or_nothing and result.score < result.max_score:
        raise AssertionError(report)
    return float(result.score)


def _grade(question, namespace, seed, root, path):
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.notebook_grade import find_notebook

    notebook = find_notebook(question, path)
    if notebook is not None and notebook.is_file():
        return grade_path(notebook, question=question, seed=seed, root=root), NOTE
    cells = kernel_cells()
    if cells:
        import json
        import tempfile
        from pathlib import Path
        with tempfile.TemporaryDirectory(prefix="bpt-nbgrader-") as folder:
            ran = Path(folder) / f"{question}.ipynb"
            ran.write_text(json.dumps(
                {"nbformat": 4, "nbformat_minor": 5, "metadata": {"backprop_traps": {"question": question}},
                 "cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [],
                            "execution_count": None} for c in cells]}), encoding="utf-8")
            result = grade_path(ran, question=question, seed=seed, root=root)
        result.submission = "this notebook (the cells this kernel ran)"
        return result, NOTE_HISTORY
    return _in_process(question, namespace, seed, root), NOTE_IN_PROCESS


def kernel_cells() -> list[str]:
    """The cells this IPython kernel ran, in order, but for the ones that grade (this one and
    "Grade it"); [] outside IPython."""
    from backprop_traps.grader.notebook_grade import _kernel
    history = getattr(getattr(_kernel(), "history_manager", None), "input_hist_raw", None) or []
    return [src for src in history if isinstance(src, str) and src.strip()
            and "run_hidden_checks(" not in src and "grade_this_notebook(" not in src]


def _in_process(question, namespace, seed, root):
    """The last resort: the question's checks on ``namespace``'s functions, in this process."""
    from backprop_traps.grader.authoring.in_process import InProcessCaller, run_checks
    from backprop_traps.grader.checks import load_question
    from backprop_traps.grader.engine.run import DEFAULT_SEED
    from backprop_traps.grader.loading.questions import questions_root
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.grader.engine.results import GradeResult

    root = questions_root(root)
    seed = DEFAULT_SEED if seed is None else seed
    try:
        checks = load_question(question, root)
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            f"no hidden checks for {question!r} in {root}: if the question lives in your own "
            "questions folder, set BACKPROP_TRAPS_QUESTIONS to it for the kernel") from None
    result = GradeResult(submission="this notebook", question=question, score=0.0,
                         max_score=checks.max_score, seed=seed, isolation="in-process")
    result.tests = run_checks(checks, InProcessCaller(namespace), load_solution(question, root), seed)
    result.score = float(sum(t.points for t in result.tests))
    return result
