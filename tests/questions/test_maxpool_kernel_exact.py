"""The exact-to-the-bit check tells a float32 accumulator only when the gather is off by rounding:
a gather that keeps one window's gradient (off by whole gradients) was told "accumulate in
float64, never in float32", a mistake it does not have."""
from pathlib import Path

import pytest

from backprop_traps.grader.authoring.corpus import answers, grade_answer
from conftest import REPO, solution_source

EXACT = "gather and scatter agree to the last bit in float64"


def exact_check(answer):
    """The answer graded as `grade validate` grades it (a snippet after the solution's code)."""
    found = next(a for a in answers(REPO, "maxpool_kernel", ()) if Path(a.path).name == answer)
    result = grade_answer(found, "maxpool_kernel", REPO, 1234, solution_source("maxpool_kernel"))
    return next(t for t in result.tests if t.name == EXACT)


@pytest.mark.parametrize("answer", ["gather_first_window_only.py"])
def test_a_lost_window_is_not_called_float32(answer):
    check = exact_check(answer)
    assert not check.passed
    assert "float32" not in check.feedback, check.feedback
    assert check.trap == "lost-overlap" and "The largest difference is at [" in check.feedback


def test_a_float32_accumulator_is_still_told_so():
    check = exact_check("float32_accumulator.py")
    assert not check.passed and "never in float32" in check.feedback and "at [" in check.feedback
