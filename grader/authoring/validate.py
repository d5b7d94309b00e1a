"""``grade validate``: prove each question sound, with one readable line per finding.

A question is sound when its scaffold placeholders are filled in, its hidden checks pass
the solution and fail the stub, every trap's wrong answer and every automatic wrong answer
(``soundness``), the stub is fresh and leaks nothing (no solution line, no hidden check, and
none of the answers the stub layout keeps in the solution: ``stub_leaks``; no check title that
gives a trap away: ``neutral_titles``), both notebooks run in a real kernel
and the kernels agree with the solution (``artifacts``), and a solution that is graded on memory
gets full marks on every machine class the README names (``machine_classes``). ``quick`` skips
the two slow steps (notebooks and kernels) and proves one machine class.
"""
from __future__ import annotations

from pathlib import Path

from backprop_traps.grader.authoring import artifacts, machine_classes, soundness, stub_leaks, trap_list
from backprop_traps.grader.authoring.findings import SKIP, QuestionReport
from backprop_traps.grader.engine.run import DEFAULT_SEED
from backprop_traps.grader.loading.questions import questions_root, solution_notebooks, solution_path


def validate_question(question: str, root: Path | str | None = None, quick: bool = False,
                      seed: int = DEFAULT_SEED) -> QuestionReport:
    """Validate one question of the questions folder ``root`` (default: this kit)."""
    root = questions_root(root)
    report = QuestionReport(question)
    if not artifacts.check_placeholders(report, question, root):
        return report  # the rest would only repeat that the placeholders are empty
    kernels = None if quick else artifacts.start_kernel_check(question, root)  # runs meanwhile
    try:
        soundness.check_grading(report, question, root, seed)
        machine_classes.check_machine_classes(report, question, root, seed, quick=quick)
        artifacts.check_stub_files(report, question, root)
        stub_leaks.check_stub_practice(report, question, root, _trap_ids(question, root))
        _check_titles(report, question, root)
        check_interview(report, question, root)
        trap_list.check_trap_list(report, question, root)
        if quick:
            report.add(SKIP, "notebooks in a Jupyter kernel and kernels under the simulator (--quick)")
        else:
            artifacts.check_notebooks(report, question, root)
    finally:
        if kernels is not None:
            artifacts.finish_kernel_check(report, kernels)
    return report


def _check_titles(report: QuestionReport, question: str, root: Path) -> None:
    """The check titles give no trap away (``neutral_titles``): the stub's report lists them all."""
    from backprop_traps.grader.authoring.neutral_titles import check_titles
    from backprop_traps.grader.checks import load_question
    try:
        loaded = load_question(question, root)
    except Exception:  # no checks yet: soundness says so
        return
    check_titles(report, loaded)


def _trap_ids(question: str, root: Path) -> list[str]:
    from backprop_traps.grader.checks import load_question
    try:
        return [t.id for t in load_question(question, root).traps]
    except Exception:  # no checks yet: soundness says so
        return []


def check_interview(report: QuestionReport, question: str, root: Path) -> None:
    """The solution ends in the interview: a cell tagged ``interview`` in the parsed form."""
    from backprop_traps.grader.authoring.findings import FAIL, OK
    from backprop_traps.grader.authoring.interview import read_notebook
    source, problems = read_notebook(solution_path(question, root))
    if source is None or problems:
        report.add(FAIL, "the interview cell: " + ("; ".join(problems) or "missing (a markdown cell "
                                                   "tagged `interview`, see grader/authoring/interview.py)"))
    else:
        report.add(OK, "the solution ends in the interview (its cell has every part)")
    if source is not None:
        from backprop_traps.grader.authoring import interview, keypoint_proofs
        keypoint_proofs.prove(report, interview.parse(source), question, root)


def validate(questions=(), root: Path | str | None = None, quick: bool = False,
             seed: int = DEFAULT_SEED, on_report=None) -> list[QuestionReport]:
    """Validate ``questions`` (default: every question in ``root``); ``on_report`` is called
    with each report as soon as it is done."""
    root = questions_root(root)
    reports = []
    for question in questions or list(solution_notebooks(root)):
        reports.append(validate_question(question, root, quick=quick, seed=seed))
        if on_report is not None:
            on_report(reports[-1])
    return reports
