"""No free points, for every question: answers whose functions return None, zeros, NaN or
their own input, or raise, score 0 on every check (all functions at once), and a check that
reads a function's answer fails when that function alone does nothing. This is the part of
`grade validate` that proves it (grader/authoring/free_points.py and soundness.check_variants).

Each shipped question's proof runs in its `grade validate --quick` test (test_<id>_is_sound, or
test_new_and_validate.py's test_every_shipped_question_with_checks_is_sound): validate calls
check_no_free_points and check_variants with the same seed and fails on any of their findings,
so the suite no longer runs them a second time per question here (issue 27: the test command
under 8 minutes). Here: the pieces they are built from."""
import pytest

from backprop_traps.grader.authoring.free_points import KINDS, contract_functions, degenerate, nan_like_answer
from conftest import REPO


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
