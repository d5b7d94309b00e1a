"""straight_through graded end to end: right answers (numpy and PyTorch), each trap named,
the stub; and the question is sound (`grade validate straight_through --quick`; the kernels
have their own test)."""
from pathlib import Path

import pytest

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.engine.run import grade_path
from conftest import ANSWERS, REPO

ROOT = Path(__file__).resolve().parents[2]
TRAPS = ["zero-gradient", "no-clip", "round-half-up"]


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def test_straight_through_is_sound():
    report = validate_question("straight_through", ROOT, quick=True)
    assert report.ok, report.text()


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "08_straight_through.ipynb")
    assert result.error is None
    assert result.score == result.max_score > 0
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "08_straight_through.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)
    assert not any("Traceback" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / "straight_through" / "torch_answer.py")
    assert result.score == result.max_score, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(answer_file, trap):
    result = grade_path(answer_file("straight_through", trap.replace("-", "_")))
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, failures(result)
    assert named <= set(TRAPS) | {None}


def test_ties_away_from_zero_are_named_round_half_up(answer_file):
    """C's round() (ties away from zero) is the same trap as floor(u + 0.5)."""
    result = grade_path(answer_file("straight_through", "round_half_away"))
    assert [(t.name, t.trap) for t in result.tests if not t.passed] == [
        ("forward: values exactly half way between two grid points", "round-half-up")], failures(result)


def test_mask_after_rounding_gets_full_marks(answer_file):
    """PyTorch's convention (the mask tests round(x / scale)) differs from the notebook's only
    in the half steps just outside the range, which the checks never sample."""
    result = grade_path(answer_file("straight_through", text=(
        "def fake_quant_backward(dout, x, scale, qmin, qmax):\n"
        "    q = np.round(x / scale)\n"
        "    return np.where((q >= qmin) & (q <= qmax), dout, 0.0)\n")))
    assert result.score == result.max_score, failures(result)


def test_strict_range_fails_only_the_inclusive_ends(answer_file):
    result = grade_path(answer_file("straight_through", text=(
        "def fake_quant_backward(dout, x, scale, qmin, qmax):\n"
        "    u = x / scale\n"
        "    return np.where((u > qmin) & (u < qmax), dout, 0.0)\n")))
    wrong = failures(result)
    assert [name for name, _, _ in wrong] == ["backward: inputs exactly at either end of the range"], wrong
    assert "exact ends" in wrong[0][2]
