"""The tape_autodiff question graded end to end: right answers, each trap, the stub, and
`grade validate tape_autodiff --quick` (no check passes zeros or an ignored dout)."""
import numpy as np
import pytest

from conftest import ANSWERS, REPO
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.engine.run import grade_path

TRAPS = ["fanout-overwrite", "wrong-order", "no-zero-init"]


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "06_tape_autodiff.ipynb")
    assert result.error is None
    assert result.score == result.max_score > 0, failures(result)
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "06_tape_autodiff.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)
    assert not any("Traceback" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / "tape_autodiff" / "torch_answer.py")
    assert result.score == result.max_score, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(answer_file, trap):
    result = grade_path(answer_file("tape_autodiff", trap.replace("-", "_")))
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, failures(result)
    assert named <= set(TRAPS) | {None}


def test_a_leak_keyed_by_slot_is_named_too(answer_file):
    """Buffers kept per slot index (not per graph) leak into every later call."""
    leak = ("_kept = {}\n"
            "_right = tape_backward\n"
            "def tape_backward(dout, graph, values):\n"
            "    grads = _right(dout, graph, values)\n"
            "    for n, g in enumerate(grads):\n"
            "        if n in _kept and _kept[n].shape == g.shape:\n"
            "            _kept[n] = _kept[n] + g\n"
            "        else:\n"
            "            _kept[n] = g\n"
            "    return [k.copy() for k in list(_kept.values())[:len(grads)]]\n")
    result = grade_path(answer_file("tape_autodiff", text=leak))
    named = {t.trap for t in result.tests if not t.passed}
    assert named == {"no-zero-init"}, failures(result)


def test_feedback_shows_the_graph(answer_file):
    result = grade_path(answer_file("tape_autodiff", "fanout_overwrite"))
    fan_out = next(t for t in result.tests if t.name.startswith("fan-out"))
    assert fan_out.trap == "fanout-overwrite"
    assert "v1 = mul(v0, v0)" in fan_out.feedback and "reaches the output by 2 paths" in fan_out.feedback


def test_a_0d_array_crosses_the_sandbox_as_0d():
    from backprop_traps.grader.sandbox import wire
    back = wire.decode(wire.encode([np.asarray(2.5), np.ones((2, 3)).T])[wire._LEN.size:])
    assert back[0].shape == () and back[0] == 2.5 and back[1].shape == (3, 2)


def test_tape_autodiff_is_sound():
    report = validate_question("tape_autodiff", REPO, quick=True)
    assert report.ok, report.text()


def test_validate_accepts_a_question_that_says_why_it_has_no_kernels():
    from backprop_traps.grader.authoring import artifacts
    from backprop_traps.grader.authoring.findings import QuestionReport
    report = QuestionReport("tape_autodiff")
    artifacts.finish_kernel_check(report, artifacts.start_kernel_check("tape_autodiff", REPO))
    assert report.ok and "no kernels, on purpose: a tape interpreter" in report.text()


def test_a_wrong_op_backward_used_once_deep_in_a_graph_is_blamed_on_op_backward():
    """The log backward is wrong and tape_backward is right: every tape check must say so, even
    where log is reached after many other op_backward calls (engine/upstream.py replays the
    first call of each op, not only the first four calls)."""
    result = grade_path(ANSWERS / "tape_autodiff" / "wrong_log_backward_divides_by_out.py")
    tape_checks = [t for t in result.tests if not t.passed and "op_backward:" not in t.name
                   and "inputs left" not in t.name]
    assert tape_checks, [t.name for t in result.tests]
    for t in tape_checks:
        assert "your op_backward answers differently" in t.feedback and t.trap is None, (t.name, t.feedback)
