"""batchnorm_backward graded end to end: the question is sound (`grade validate
batchnorm_backward --quick`: the solution at full marks, the stub at 0, every answer in
tests/answers/batchnorm_backward/ as its name or `# expect:` line says, no free points), the
PyTorch answer at full marks, each trap costing only its own checks, other forms of the traps
named, and a seed that replays. The kernels have their own test.

Beyond the solution and the stub (through the sandbox, inside validate), answers are graded
in process, as `grade validate` grades trap answers: the same checks in a tenth of the time.
"""
from pathlib import Path

import pytest

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.engine.run import DEFAULT_SEED
from conftest import ANSWERS, graded_in_process

ROOT = Path(__file__).resolve().parents[2]
QID = "batchnorm_backward"
TRAIN, RUNNING, EVAL, ONE = ("training forward: y, mean and rstd from the batch's own statistics",
                             "training forward: the running mean and variance",
                             "evaluation forward: the running statistics, returned unchanged",
                             "training forward with N = 1 and N = 2")
DX, PROPS, PARAMS = ("dx against finite differences",
                     "dx: two identities of every column (eps = 0)",
                     "dgamma and dbeta")
EDGES = "edge sizes (N = 2, D = 1, a 256 x 32 batch): forward and backward"
UNCHANGED = "inputs left unchanged, the running averages included (and the answers right)"


def failures(result):
    return [(t.name, t.trap, t.feedback[:200]) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    """Grade the solution's code plus ``snippet`` (or ``snippet`` alone) in process."""
    return graded_in_process(QID, snippet, base, seed)


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_batchnorm_backward_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


def test_torch_answer_gets_full_marks():
    """F.batch_norm and native_batch_norm_backward (in process: importing torch in a sandbox
    child costs seconds and proves nothing more)."""
    pytest.importorskip("torch")
    result = graded(answer("torch_answer"), base=False)
    assert result.score == result.max_score == 15, failures(result)


@pytest.mark.parametrize("trap, lost", [
    ("stats-as-constants", {DX, PROPS, EDGES}),
    ("wrong-axis", {DX, PROPS, EDGES}),
    ("eval-in-train", {TRAIN, RUNNING, ONE, EDGES}),
    ("train-in-eval", {EVAL}),
    ("running-var-biased", {RUNNING, ONE, EDGES}),
    ("momentum-flipped", {RUNNING, ONE, EDGES}),
    ("batch-of-one", {ONE}),
    ("unbiased-in-normalisation", {TRAIN, ONE, DX, PROPS, EDGES}),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(trap, lost):
    result = graded(answer(trap.replace("-", "_")))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    also = {"batch-of-one"} if trap == "eval-in-train" else set()  # it accepts N = 1 in training too
    assert {t.trap for t in result.tests if not t.passed} <= {trap, None} | also, failures(result)
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


@pytest.mark.parametrize("trap, snippet", [
    # only the variance's path kept: the mean's path lost
    ("stats-as-constants", "def batchnorm_backward(dy, x, gamma, mean, rstd):\n"
                           "    xhat = (x - mean) * rstd\n    g = dy * gamma\n"
                           "    dx = rstd * (g - xhat * (g * xhat).mean(axis=0))\n"
                           "    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)\n"),
    # the parameter sums over each example's features
    ("wrong-axis", "_right = batchnorm_backward\n"
                   "def batchnorm_backward(dy, x, gamma, mean, rstd):\n"
                   "    dx, _, _ = _right(dy, x, gamma, mean, rstd)\n"
                   "    return dx, (dy * (x - mean) * rstd).sum(axis=1), dy.sum(axis=1)\n"),
    # a scale that matches no formula: the column sums still name it
    ("stats-as-constants", "def batchnorm_backward(dy, x, gamma, mean, rstd):\n"
                           "    xhat = (x - mean) * rstd\n"
                           "    return 1.5 * dy * gamma * rstd, (dy * xhat).sum(axis=0), dy.sum(axis=0)\n"),
])
def test_other_forms_of_the_traps_are_named(trap, snippet):
    result = graded(snippet)
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


def test_a_running_buffer_written_in_place_loses_only_that_point():
    result = graded(answer("wrong_in_place"))
    assert {t.name for t in result.tests if not t.passed} == {UNCHANGED}, failures(result)
    assert "running_mean" in next(t.feedback for t in result.tests if not t.passed)


def test_seed_replays():
    a, b = (graded(answer("momentum_flipped"), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
