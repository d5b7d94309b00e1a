"""What a notebook's autograded cell calls, so an nbgrader course grades with the kit's checks.

The last cell of every solution notebook (an nbgrader test cell, locked, worth the
question's full score) runs::

    from grader.nbgrader_bridge import run_hidden_checks
    run_hidden_checks("routing_trap", globals())

``nbgrader autograde`` executes it in the learner's kernel. The question's hidden checks
run against the functions the notebook defined, with the same seed, inputs, reference and
feedback as ``grade``; the report is printed (it shows in nbgrader's feedback) and the
score is the cell's value, which nbgrader takes as partial credit.

Weaker than ``grade``: the checks run in the learner's own process, not in the sandbox,
so there are no time or memory limits beyond nbgrader's own cell timeout, the learner's
code could read the hidden checks or tamper with the grader, and peak memory is measured
in a process that also holds the notebook. See docs/authoring.md.
"""
from __future__ import annotations

import warnings

NOTE = ("  (run inside this notebook's kernel for nbgrader, without the sandbox; "
        "`grade <notebook>` runs the same checks isolated)")


def run_hidden_checks(question: str, namespace: dict, seed: int | None = None, root=None,
                      all_or_nothing: bool = False) -> float:
    """Run ``question``'s hidden checks on the functions in ``namespace`` (a notebook's
    ``globals()``); print the report and return the score (nbgrader's partial credit).

    ``root``: the questions folder (default: ``BACKPROP_TRAPS_QUESTIONS`` or this kit).
    ``all_or_nothing``: raise AssertionError with the report unless every check passes.
    """
    from grader.authoring.in_process import InProcessCaller, run_checks
    from grader.checks import load_question
    from grader.engine import DEFAULT_SEED
    from grader.questions import questions_root
    from grader.reference import load_solution
    from grader.report import render
    from grader.results import GradeResult

    root = questions_root(root)
    seed = DEFAULT_SEED if seed is None else seed
    try:
        checks = load_question(question, root)
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            f"no hidden checks for {question!r} in {root}: if the question lives in your own "
            "questions folder, set BACKPROP_TRAPS_QUESTIONS to it for the kernel") from None
    caller = InProcessCaller(namespace)
    result = GradeResult(submission="this notebook", question=question, score=0.0,
                         max_score=checks.max_score, seed=seed, isolation="in-process")
    with warnings.catch_warnings():  # a cell with anything on stderr gets 0 from nbgrader
        warnings.simplefilter("ignore")
        result.tests = run_checks(checks, caller, load_solution(question, root), seed)
    result.score = float(sum(t.points for t in result.tests))
    report = render(result, color=False) + "\n" + NOTE
    print(report)
    if all_or_nothing and result.score < result.max_score:
        raise AssertionError(report)
    return result.score
