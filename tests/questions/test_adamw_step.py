"""adamw_step graded end to end: the question is sound (`grade validate adamw_step --quick`:
the solution at full marks, the stub at 0, every answer in tests/answers/adamw_step/ as its
name or `# expect:` line says, no free points), torch.optim.AdamW's own step at full marks,
each trap costing only its own checks, and a seed that replays. The kernels have their own
test.
"""
from pathlib import Path

import pytest

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.engine.run import DEFAULT_SEED
from conftest import ANSWERS, graded_in_process

ROOT = Path(__file__).resolve().parents[2]
QID = "adamw_step"
ADAM, DECAY, MASK, EPS = ("AdamW: the moments and the bias-corrected step (t = 1 and t = 10)",
                          "weight decay (t = 1 and t = 5, weight_decay = 0.1)",
                          "no weight decay where the mask says not to (biases, norm weights)",
                          "tiny gradients, where v is near eps (and zero gradients)")
MASTER = "mixed_precision_step: one step from float16 gradients (lr = 1e-4)"
SKIP = ("a skipped step (inf or NaN in the gradients) changes nothing; the largest finite float16 "
        "does not skip")
FLOPS = "bookkeeping: training FLOPs of a dense transformer"
UNCHANGED = "inputs left unchanged (and the answers right)"


def failures(result):
    return [(t.name, t.trap, t.feedback[:200]) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    return graded_in_process(QID, snippet, base, seed)


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_adamw_step_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


def test_torch_answer_gets_full_marks():
    """torch.optim.AdamW's own step, float64 and float32 (in process)."""
    pytest.importorskip("torch")
    result = graded(answer("torch_answer"), base=False)
    assert result.score == result.max_score == 15, failures(result)


@pytest.mark.parametrize("trap, lost", [
    ("no-bias-correction", {ADAM, DECAY, MASK, EPS, MASTER, SKIP, UNCHANGED}),
    ("l2-not-decoupled", {DECAY, MASTER, SKIP, UNCHANGED}),
    ("decay-on-bias-and-norm", {MASK}),
    ("eps-inside-sqrt", {ADAM, DECAY, EPS}),  # first steps: a gradient near 0 shows it too
    ("update-in-low-precision", {MASTER, SKIP}),
    ("skip-not-clean", {SKIP}),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(trap, lost):
    result = graded(answer(trap.replace("-", "_")))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    assert {t.trap for t in result.tests if not t.passed} <= {trap, None}, failures(result)
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


def test_a_master_copy_kept_in_float16_is_named():
    snippet = ("_right_mixed = mixed_precision_step\n"
               "def mixed_precision_step(*args):\n"
               "    master, w16, m, v, t = _right_mixed(*args)\n"
               "    return w16, w16, m, v, t\n")
    failed = {t.name: t for t in graded(snippet).tests if not t.passed}
    assert failed[MASTER].trap == "update-in-low-precision", failures(graded(snippet))


def test_forward_only_flops_lose_the_flops_point_only():
    result = graded(answer("wrong_forward_only_flops"))
    assert {t.name for t in result.tests if not t.passed} == {FLOPS}, failures(result)


def test_seed_replays():
    a, b = (graded(answer("no_bias_correction"), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
