"""grad_accumulation graded end to end: the solution, the stub, the PyTorch oracle, each trap (a
complete answer of its own), other forms of the traps recognised by behaviour, and
`grade validate grad_accumulation --quick` (no check passes zeros; the kernels have their own test)."""
from pathlib import Path

import pytest

from conftest import ANSWERS, REPO
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.engine.run import grade_path

ROOT = Path(__file__).resolve().parents[2]
TRAPS = ["mean-of-means", "sum-of-means", "divide-by-steps", "zeroed-in-loop", "half-precision-accumulator",
         "stale-buffer", "full-batch-at-once"]
ACC = "def accumulated_grads(params, x, y, micro_batch):\n"


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def failed(result):
    return [t for t in result.tests if not t.passed]


def test_grad_accumulation_is_sound():
    report = validate_question("grad_accumulation", ROOT, quick=True)
    assert report.ok, report.text()


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "13_grad_accumulation.ipynb")
    assert result.error is None
    assert result.score == result.max_score == 16
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "13_grad_accumulation.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)
    assert not any("Traceback" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / "grad_accumulation" / "torch_answer.py")
    assert result.score == result.max_score, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(trap):
    """Each trap's file is a complete answer: every function right but this one mistake."""
    result = grade_path(ANSWERS / "grad_accumulation" / f"{trap.replace('-', '_')}.py")
    assert result.error is None and result.score < result.max_score
    named = {t.trap for t in failed(result)}
    assert trap in named, failures(result)
    assert named <= {trap, None}, failures(result)


def test_mean_of_means_is_right_when_micro_batch_divides_n():
    result = grade_path(ANSWERS / "grad_accumulation" / "mean_of_means.py")
    lost = {t.name.split(": ")[1] for t in failed(result)}
    assert "micro-batches that divide the batch" not in lost
    assert "an uneven last micro-batch" in lost


@pytest.mark.parametrize("trap, body", [
    # the buffer reassigned, not zeroed: the last micro-batch's MEAN gradient, no weight at all
    ("zeroed-in-loop", "    for s in range(0, x.shape[0], micro_batch):\n"
                       "        total = mlp_grads(params, x[s:s + micro_batch], y[s:s + micro_batch])\n"
                       "    return total\n"),
    # a float16 result handed back as it is: named from its dtype
    ("half-precision-accumulator", "    grads = _right(params, x, y, micro_batch)\n"
                                   "    return tuple(g.astype(np.float16) for g in grads)\n"),
    # the whole forward and backward on the full batch, micro_batch ignored
    ("full-batch-at-once", "    return mlp_grads(params, x, y)\n"),
    # a mutable default argument as the buffer
    ("stale-buffer", "    return _stale(params, x, y, micro_batch)\n\n\n"
                     "def _stale(params, x, y, micro_batch, _total=[]):\n"
                     "    if not _total or _total[0].shape != params[0].shape:\n"
                     "        _total[:] = [np.zeros_like(p) for p in params]\n"
                     "    for buffer, g in zip(_total, _right(params, x, y, micro_batch)):\n"
                     "        buffer += g\n"
                     "    return tuple(t.copy() for t in _total)\n"),
], ids=["reassigned-mean", "float16-returned", "mlp-grads-on-everything", "default-argument"])
def test_other_forms_of_a_trap_are_named(answer_file, trap, body):
    result = grade_path(answer_file("grad_accumulation", text="_right = accumulated_grads\n\n\n" + ACC + body))
    assert result.score < result.max_score
    named = {t.trap for t in failed(result)}
    assert trap in named and named <= {trap, None}, failures(result)


def test_a_random_answer_is_not_called_a_stale_buffer(answer_file):
    """Two answers to the same call that differ by something other than one more gradient:
    said in plain words, no trap named."""
    snippet = ("_right = accumulated_grads\n\n\n" + ACC +
               "    noise = np.random.default_rng().standard_normal()\n"
               "    return tuple(g * (1 + noise) for g in _right(params, x, y, micro_batch))\n")
    result = grade_path(answer_file("grad_accumulation", text=snippet))
    accumulated = [t for t in failed(result) if t.name.startswith("accumulated_grads")]
    assert accumulated and all(t.trap is None and "answered differently" in t.feedback
                               for t in accumulated), failures(result)


def test_a_dropped_last_micro_batch_is_explained_by_its_weights():
    """Not a trap, and not float32 rounding either (on the cancelling batch the missing row is
    1e-7 of the partial sums): the feedback shows the weights the answer gives the micro-batches."""
    result = grade_path(ANSWERS / "grad_accumulation" / "wrong_last_micro_batch_dropped.py")
    uneven = [t for t in failed(result) if "uneven" in t.name or "float64 buffers" in t.name]
    assert len(uneven) == 2 and all(t.trap is None for t in uneven), failures(result)
    assert all("with the weights [" in t.feedback and ", 0]" in t.feedback for t in uneven)


def test_a_wrong_mlp_grads_costs_only_its_own_check(answer_file):
    """accumulated_grads (and minibatch_noise) graded against the reference's gradient: a learner
    whose mlp_grads is wrong but whose other functions do not use it loses only the mlp_grads check."""
    snippet = ("_right_grads = mlp_grads\n\n\n"
               "def accumulated_grads(params, x, y, micro_batch):\n"
               "    n = x.shape[0]\n"
               "    total = [np.zeros(p.shape) for p in params]\n"
               "    for s in range(0, n, micro_batch):\n"
               "        for b, g in zip(total, _right_grads(params, x[s:s + micro_batch], y[s:s + micro_batch])):\n"
               "            b += g * (min(s + micro_batch, n) - s) / n\n"
               "    return tuple(total)\n\n\n"
               "def minibatch_noise(params, x, y, B):\n"
               "    rows = zip(*(_right_grads(params, x[i:i + 1], y[i:i + 1]) for i in range(x.shape[0])))\n"
               "    return tuple(np.var(np.stack(g), axis=0) / B for g in rows)\n\n\n"
               "def mlp_grads(params, x, y):\n"
               "    return tuple(2 * g for g in _right_grads(params, x, y))\n")
    result = grade_path(answer_file("grad_accumulation", text=snippet))
    assert [t.name.split(":")[0] for t in failed(result)] == ["mlp_grads"], failures(result)
    assert "2 times the right value" in failed(result)[0].feedback


def test_a_loss_averaged_over_every_element_is_explained(answer_file):
    snippet = ("def mlp_loss(params, x, y):\n"
               "    W1, b1, W2, b2 = params\n"
               "    return 0.5 * float(np.mean((np.maximum(x @ W1 + b1, 0) @ W2 + b2 - y) ** 2))\n")
    result = grade_path(answer_file("grad_accumulation", text=snippet))
    assert [t.name.split(":")[0] for t in failed(result)] == ["mlp_loss"], failures(result)
    assert "divided by N * D_out" in failed(result)[0].feedback


def test_writing_into_x_loses_the_unchanged_check(answer_file):
    snippet = ("_right = accumulated_grads\n\n\n" + ACC +
               "    grads = _right(params, x, y, micro_batch)\n"
               "    x[:micro_batch] *= 0.5\n"
               "    return grads\n")
    result = grade_path(answer_file("grad_accumulation", text=snippet))
    unchanged = [t for t in failed(result) if t.name == "inputs left unchanged"]
    assert unchanged and "`x`" in unchanged[0].feedback, failures(result)


def test_seed_replays():
    path = ANSWERS / "grad_accumulation" / "zeroed_in_loop.py"
    a, b = grade_path(path, seed=7), grade_path(path, seed=7)
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]


@pytest.mark.parametrize("name", ["float32_accumulator", "bfloat16_accumulator"])
def test_float32_is_told_not_named_and_half_precision_is_named(name):
    """Issue 22, E4: float32 accumulation is common practice, so a float32 buffer is told as
    float32 where the contract wants float64 and named no trap; a float16 or bfloat16 buffer is
    `half-precision-accumulator` (the retired `float32-accumulator` is never named again)."""
    result = grade_path(ANSWERS / "grad_accumulation" / f"{name}.py")
    named = {t.trap for t in failed(result)}
    assert result.score < result.max_score and "float32-accumulator" not in named
    if name.startswith("float32"):
        assert named == {None} and any("float32 where the contract wants float64" in t.feedback
                                       for t in failed(result)), failures(result)
    else:
        assert named <= {"half-precision-accumulator", None} and "half-precision-accumulator" in named, failures(result)
