"""The routing-trap question graded end to end: right answers, each trap, the stub."""
import pytest

from backprop_traps.grader.engine.run import grade_path
from conftest import ANSWERS, REPO

TRAPS = ["avg-routing", "lost-overlap", "tie-broadcast", "tie-order", "avg-unscaled"]


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "01_routing_trap.ipynb")
    assert result.error is None
    assert result.score == result.max_score > 0
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "01_routing_trap.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)
    assert not any("Traceback" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / "routing_trap" / "torch_answer.py")
    assert result.score == result.max_score, [t.feedback for t in result.tests if not t.passed]


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(answer_file, trap):
    result = grade_path(answer_file("routing_trap", trap.replace("-", "_")))
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]
    assert named <= set(TRAPS) | {None}


def test_seed_replays_and_changes_inputs(answer_file):
    path = answer_file("routing_trap", "lost_overlap")
    a, b = grade_path(path, seed=7), grade_path(path, seed=7)
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
    assert a.seed == 7
