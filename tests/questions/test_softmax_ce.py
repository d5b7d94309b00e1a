"""The softmax_ce question graded end to end: right answers, each trap, the stub."""
import pytest

from backprop_traps.grader.engine.run import grade_path
from conftest import ANSWERS, REPO

TRAPS = ["batch-not-averaged", "overflow", "missing-onehot", "sign-flipped", "jacobian-diag-only"]


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "04_softmax_ce.ipynb")
    assert result.error is None
    assert result.score == result.max_score > 0
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "04_softmax_ce.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)
    assert not any("Traceback" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / "softmax_ce" / "torch_answer.py")
    assert result.score == result.max_score, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(answer_file, trap):
    result = grade_path(answer_file("softmax_ce", trap.replace("-", "_")))
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, failures(result)
    assert named <= set(TRAPS) | {None}


def test_epsilon_in_the_log_is_named_overflow(answer_file):
    """A finite but wrong loss (log(p + 1e-12)) on huge logits is the overflow trap too."""
    result = grade_path(answer_file("softmax_ce", "overflow_epsilon"))
    assert [(t.name, t.trap) for t in result.tests if not t.passed] == [
        ("logits up to +-1e4: finite and correct", "overflow")], failures(result)


def test_loss_as_a_0d_array_is_accepted(answer_file):
    snippet = ("_ce = softmax_cross_entropy\n\n\n"
               "def softmax_cross_entropy(logits, labels):\n"
               "    loss, dlogits = _ce(logits, labels)\n"
               "    return np.array(loss), dlogits\n")
    result = grade_path(answer_file("softmax_ce", text=snippet))
    assert result.score == result.max_score, failures(result)


@pytest.mark.parametrize("wrong, says", [
    ("[loss]", "must return the loss as a Python float, but it returned list"),
    ("np.full(len(labels), loss)", "an array of shape"),
])
def test_loss_of_the_wrong_kind_fails_clearly(answer_file, wrong, says):
    snippet = ("_ce = softmax_cross_entropy\n\n\n"
               "def softmax_cross_entropy(logits, labels):\n"
               "    loss, dlogits = _ce(logits, labels)\n"
               f"    return {wrong}, dlogits\n")
    result = grade_path(answer_file("softmax_ce", text=snippet))
    assert result.score < result.max_score
    assert any(says in t.feedback for t in result.tests if not t.passed), failures(result)
    assert not any("Traceback" in t.feedback or "could not be checked" in t.feedback for t in result.tests)


def test_writing_into_the_logits_loses_the_unchanged_check(answer_file):
    snippet = ("_ce = softmax_cross_entropy\n\n\n"
               "def softmax_cross_entropy(logits, labels):\n"
               "    logits -= logits.max(axis=1, keepdims=True)\n"
               "    return _ce(logits, labels)\n")
    result = grade_path(answer_file("softmax_ce", text=snippet))
    failed = [t for t in result.tests if not t.passed]
    assert [t.name for t in failed] == ["inputs left unchanged"], failures(result)
    assert "logits" in failed[0].feedback
