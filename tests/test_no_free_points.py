"""No free points, for every question: answers whose functions return None, zeros, NaN or
their own input, or raise, score 0 on every check (all functions at once), and a check that
reads a function's answer fails when that function alone does nothing. This is the part of
`grade validate` that proves it, run in process (no sandbox, no notebooks: seconds)."""
import pytest

from backprop_traps.grader.authoring.findings import FAIL, QuestionReport
from backprop_traps.grader.authoring.free_points import (KINDS, check_no_free_points, contract_functions,
                                          degenerate, nan_like_answer)
from backprop_traps.grader.authoring.soundness import check_variants
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.loading.questions import solution_notebooks
from backprop_traps.grader.loading.reference import load_solution
from conftest import REPO

QUESTIONS = list(solution_notebooks())


def _loaded(question):
    from backprop_traps.grader.authoring.artifacts import check_placeholders
    if not check_placeholders(QuestionReport(question), question, REPO):
        pytest.skip(f"{question} is still a scaffold (validate stops at its SCAFFOLD: lines)")
    try:
        return load_question(question, REPO), load_solution(question, REPO)
    except ModuleNotFoundError:
        pytest.skip(f"{question} has no hidden checks yet")


@pytest.mark.parametrize("question", QUESTIONS)
def test_answers_that_do_nothing_score_zero(question):
    checks, ref = _loaded(question)
    functions = contract_functions(question, REPO)
    assert functions, "no contract functions found in the solution notebook"
    report = QuestionReport(question)
    failed_by = {c.name: set() for c in checks.checks}
    check_no_free_points(report, checks, ref, 1234, functions, failed_by)
    check_variants(report, checks, ref, 1234, failed_by)
    problems = [f for f in report.findings if f.status == FAIL
                and not f.text.startswith("checks that pass whatever the answer")]  # needs the corpus
    assert not problems, report.text()


def test_contract_functions_are_the_solution_cells_defs():
    assert contract_functions("routing_trap", REPO) == [
        "maxpool2d_forward", "maxpool2d_backward", "avgpool2d_forward", "avgpool2d_backward"]
    assert "matvec" not in contract_functions("forward_vs_reverse", REPO)  # the grader's helper


def test_the_do_nothing_answers():
    import numpy as np
    ref = lambda x, k: (x * 2.0, np.arange(3), 1.5)  # noqa: E731
    x = np.ones(2)
    assert degenerate("none", ref)(x, 1) is None
    assert degenerate("own-input", ref)(x, 1) is x
    out, idx, scalar = degenerate("nan", ref)(x, 1)
    assert np.isnan(out).all() and idx.tolist() == [0, 0, 0] and np.isnan(scalar)
    out, idx, scalar = degenerate("zeros", ref)(x, 1)
    assert not out.any() and scalar == 0.0
    with pytest.raises(RuntimeError):
        degenerate("raises", ref)(x, 1)
    assert set(KINDS) == {"none", "zeros", "nan", "own-input", "raises"}
    assert nan_like_answer([np.zeros(2, dtype=bool)])[0].dtype == bool
