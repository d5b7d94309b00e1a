"""mlp_backprop graded end to end: right answers, each trap named, the stub; and the
question is sound (`grade validate mlp_backprop --quick`; the kernels have their own test)."""
from pathlib import Path

import pytest

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.engine.run import grade_path
from conftest import ANSWERS, REPO

ROOT = Path(__file__).resolve().parents[2]
TRAPS = ["no-transpose", "bias-not-summed", "relu-mask-wrong", "activation-not-saved"]
BACKWARD = "def mlp_backward(dout, x, z, h, W1, W2):\n"
RIGHT = {"dW2": "h.T @ dout", "db2": "dout.sum(axis=0)", "dh": "dout @ W2.T", "dz": "dh * (z > 0)",
         "dW1": "x.T @ dz", "db1": "dz.sum(axis=0)", "dx": "dz @ W1.T"}


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def backward_with(**lines):
    """A snippet redefining mlp_backward with some lines of the right one replaced."""
    body = {**RIGHT, **lines}
    return BACKWARD + "".join(f"    {k} = {v}\n" for k, v in body.items()) + \
        "    return dx, dW1, db1, dW2, db2\n"


def test_mlp_backprop_is_sound():
    report = validate_question("mlp_backprop", ROOT, quick=True)
    assert report.ok, report.text()


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "05_mlp_backprop.ipynb")
    assert result.error is None
    assert result.score == result.max_score > 0
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "05_mlp_backprop.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)
    assert not any("Traceback" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / "mlp_backprop" / "torch_answer.py")
    assert result.score == result.max_score, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(answer_file, trap):
    result = grade_path(answer_file("mlp_backprop", trap.replace("-", "_")))
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, failures(result)
    assert named <= set(TRAPS) | {None}


def test_a_transposed_weight_gradient_is_named_from_its_shape(answer_file):
    """dW = dout.T @ h has the shape (D_out, H): named no-transpose, not just a shape error."""
    result = grade_path(answer_file("mlp_backprop", "no_transpose_dw"))
    failed = [t for t in result.tests if not t.passed]
    assert failed and all(t.trap == "no-transpose" for t in failed), failures(result)
    assert "has shape (3, 7), but W2 has shape (7, 3)" in failed[0].feedback


def test_signal_through_w_says_transpose_on_non_square_layers(answer_file):
    result = grade_path(answer_file("mlp_backprop", "no_transpose"))
    second = next(t for t in result.tests if t.name.startswith("second layer"))
    assert not second.passed and "missing transpose" in second.feedback, failures(result)


@pytest.mark.parametrize("trap, lines", [
    ("bias-not-summed", {"db2": "dout[0]"}),
    ("bias-not-summed", {"db1": "dz"}),
    ("relu-mask-wrong", {"dz": "dh"}),
    ("relu-mask-wrong", {"dz": "dh * h"}),
    ("activation-not-saved", {"dW1": "h.T @ dz"}),
    ("no-transpose", {"dx": "dz @ W1"}),
])
def test_other_forms_of_each_trap_are_named(answer_file, trap, lines):
    result = grade_path(answer_file("mlp_backprop", text=backward_with(**lines)))
    assert result.score < result.max_score
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


def test_forward_returning_z_before_h_says_the_order(answer_file):
    snippet = ("_forward = mlp_forward\n\n\n"
               "def mlp_forward(x, W1, b1, W2, b2):\n"
               "    out, h, z = _forward(x, W1, b1, W2, b2)\n"
               "    return out, z, h\n")
    result = grade_path(answer_file("mlp_backprop", text=snippet))
    failed = [t for t in result.tests if not t.passed]
    assert failed and "the order is (out, h, z)" in failed[0].feedback, failures(result)


def test_loss_averaged_over_every_element_is_explained(answer_file):
    snippet = ("def mse_loss(out, y):\n"
               "    return 0.5 * float(np.mean((out - y) ** 2)), (out - y) / out.size\n")
    result = grade_path(answer_file("mlp_backprop", text=snippet))
    failed = [t for t in result.tests if not t.passed]
    assert [t.name for t in failed] == ["mse_loss: the loss and dout = (out - y) / N"]
    assert "divided by N * D_out" in failed[0].feedback


def test_an_in_place_relu_loses_the_unchanged_check(answer_file):
    snippet = ("def mlp_forward(x, W1, b1, W2, b2):\n"
               "    z = x @ W1 + b1\n"
               "    h = z\n"
               "    out = np.maximum(h, 0.0) @ W2 + b2\n"
               "    return out, np.maximum(z, 0.0), z\n\n\n"
               "_backward = mlp_backward\n\n\n"
               "def mlp_backward(dout, x, z, h, W1, W2):\n"
               "    grads = _backward(dout, x, z, h, W1, W2)\n"
               "    z[z < 0] = 0.0\n"
               "    return grads\n")
    result = grade_path(answer_file("mlp_backprop", text=snippet))
    failed = [t for t in result.tests if not t.passed]
    assert [t.name for t in failed] == ["inputs left unchanged"], failures(result)
    assert "`z`" in failed[0].feedback


def test_seed_replays(answer_file):
    path = answer_file("mlp_backprop", "relu_mask_wrong")
    a, b = grade_path(path, seed=7), grade_path(path, seed=7)
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
