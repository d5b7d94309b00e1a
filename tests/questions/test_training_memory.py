"""The training_memory question graded end to end: the solution, the stub, the PyTorch
oracle, each trap, the near misses the feedback explains, and
`grade validate training_memory --quick` (no check passes zeros)."""
import pytest

from conftest import ANSWERS, REPO
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.engine.run import grade_path

TRAPS = ["master-copy-forgotten", "adam-moments-half", "per-layer-not-per-tensor", "gb-gib-mixed",
         "checkpoint-keeps-all-recomputes"]


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def failed(result):
    return {t.name.split(":")[0]: t for t in result.tests if not t.passed}


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "09_training_memory.ipynb")
    assert result.error is None
    assert result.score == result.max_score > 0, failures(result)
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "09_training_memory.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)
    assert not any("Traceback" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / "training_memory" / "torch_answer.py")
    assert result.score == result.max_score, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(answer_file, trap):
    result = grade_path(answer_file("training_memory", trap.replace("-", "_")))
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, failures(result)
    assert named <= set(TRAPS) | {None}


def test_the_issue_numbers():
    """7B with mixed-precision Adam: 112 GB of state; 80 layers of one 1 x 8192 x 8192 bf16
    tensor: 10.7 GB, exactly 10 GiB."""
    from backprop_traps.grader.loading.reference import load_solution
    ref = load_solution("training_memory", REPO)
    assert ref.model_state_bytes(7 * 10**9, "adam", "mixed")["total"] == 112 * 10**9
    act = ref.activation_bytes(1, 8192, 8192, 80, 1, "bf16")
    assert round(ref.convert_bytes(act, "GB"), 1) == 10.7 and ref.convert_bytes(act, "GiB") == 10.0


def test_a_float_byte_count_is_refused_with_why(answer_file):
    snippet = ("_int = activation_bytes\n"
               "def activation_bytes(*args):\n"
               "    return float(_int(*args))\n")
    result = grade_path(answer_file("training_memory", text=snippet))
    check = failed(result)["activation_bytes"]
    assert "float" in check.feedback and "ints" in check.feedback
    assert set(failed(result)) == {"activation_bytes"}, failures(result)


def test_the_textbook_checkpoint_formula_is_explained(answer_file):
    """ceil(L/k) checkpoints plus a whole segment on top: counts each segment's input twice and
    never frees a checkpoint; the feedback says both, in tensors, without naming a trap."""
    snippet = ("def checkpointed_activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype, every):\n"
               "    m = -(-n_layers // every)\n"
               "    return (m + min(every, n_layers) * saved_per_layer) * batch * seq_len * width * dtype_bytes(dtype)\n")
    result = grade_path(answer_file("training_memory", text=snippet))
    names = [t for t in result.tests if t.name.startswith("checkpointed") and not t.passed]
    assert len(names) == 2 and all(t.trap is None for t in names), failures(result)
    assert "counted once" in names[0].feedback and "tensors" in names[0].feedback


def test_keeps_all_is_named_however_it_is_written(answer_file):
    """No savings at all, written as the plain activations plus the checkpoints."""
    snippet = ("def checkpointed_activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype, every):\n"
               "    m = -(-n_layers // every)\n"
               "    tensor = batch * seq_len * width * dtype_bytes(dtype)\n"
               "    return activation_bytes(batch, seq_len, width, n_layers, saved_per_layer, dtype) + m * tensor\n")
    result = grade_path(answer_file("training_memory", text=snippet))
    checkpointed = {t.trap for t in result.tests if not t.passed and t.name.startswith("checkpointed")}
    assert checkpointed == {"checkpoint-keeps-all-recomputes"}, failures(result)


def test_a_dict_with_a_missing_key_says_which(answer_file):
    snippet = ("_full = model_state_bytes\n"
               "def model_state_bytes(n_params, optimizer, precision):\n"
               "    state = _full(n_params, optimizer, precision)\n"
               "    del state['master']\n"
               "    return state\n")
    result = grade_path(answer_file("training_memory", text=snippet))
    assert result.score == result.max_score - 6
    assert all("missing master" in t.feedback for t in result.tests if not t.passed)


def test_training_memory_is_sound():
    report = validate_question("training_memory", REPO, quick=True)
    assert report.ok, report.text()


def test_validate_accepts_that_it_has_no_kernels():
    from backprop_traps.grader.authoring import artifacts
    from backprop_traps.grader.authoring.findings import QuestionReport
    report = QuestionReport("training_memory")
    artifacts.finish_kernel_check(report, artifacts.start_kernel_check("training_memory", REPO))
    assert report.ok and "no kernels, on purpose: its answers are integer arithmetic" in report.text()
