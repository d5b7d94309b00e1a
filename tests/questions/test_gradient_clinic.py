"""gradient_clinic graded end to end: the grader's patients are what they claim (their
backprop matches finite differences, the reference names exactly the planted faults, over
many seeds), right answers (the solution, loops, PyTorch) at full marks, each trap named, the
stub at zero; and the question is sound (`grade validate gradient_clinic --quick`; the kernels
have their own test).

The solution and one trap answer go through the sandbox; the rest are graded in process.
"""
from types import SimpleNamespace

import numpy as np
import pytest

from backprop_traps.grader.authoring.in_process import InProcessCaller, namespace_from_source, run_checks
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.checks.gradient_clinic import probes
from backprop_traps.grader.engine.run import DEFAULT_SEED, grade_path
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, REPO, solution_source

TRAPS = ["absolute-error", "elementwise-ratio", "ratio-of-gradient", "dead-per-entry",
         "bn-downstream", "frozen-vs-detached"]
FOLDER = ANSWERS / "gradient_clinic"


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    source = (solution_source("gradient_clinic") + "\n\n" if base else "") + snippet
    tests = run_checks(load_question("gradient_clinic"), InProcessCaller(namespace_from_source(source)),
                       load_solution("gradient_clinic"), seed)
    return SimpleNamespace(tests=tests, score=sum(t.points for t in tests),
                           max_score=sum(t.max_points for t in tests))


def test_gradient_clinic_is_sound():
    report = validate_question("gradient_clinic", REPO, quick=True)
    assert report.ok, report.text()


def test_solution_gets_full_marks_and_stub_gets_zero():
    result = grade_path(REPO / "solutions" / "18_gradient_clinic.ipynb")
    assert result.error is None and result.score == result.max_score == 18, failures(result)
    stub = grade_path(REPO / "exercises" / "18_gradient_clinic.ipynb")
    assert stub.error is None and stub.score == 0
    assert all("not implemented yet" in t.feedback for t in stub.tests)


def test_healthy_patients_backprop_matches_finite_differences():
    """The grader's own network (BatchNorm included) is right, so a planted fault is the only fault."""
    rng = np.random.default_rng(0)
    for _ in range(10):
        snapshot, planted = probes.patient(rng)
        assert planted == set()
        for g, n in zip(snapshot["grads"], snapshot["numeric_grads"]):
            assert np.linalg.norm(g - n) <= 1e-7 * max(np.linalg.norm(n), 1.0)


@pytest.mark.parametrize("fault", (None,) + probes.FAULTS)
def test_the_reference_names_exactly_the_planted_fault(fault):
    ref = load_solution("gradient_clinic")
    rng = np.random.default_rng(1)
    for _ in range(25):
        layer = None if fault in (None, "lr-too-large") else int(rng.integers(0, 3))
        snapshot, planted = probes.patient(rng, fault, layer)
        assert {tuple(f) for f in ref.diagnose(snapshot)} == planted


@pytest.mark.parametrize("kind", ["gain-up", "gain-down", "ratio", "check", "batch"])
def test_threshold_patients_sit_exactly_on_the_threshold(kind):
    ref = load_solution("gradient_clinic")
    rng = np.random.default_rng(2)
    snapshot, planted = probes.boundary_patient(rng, kind, over=False)
    if kind == "ratio":
        ratios = ref.update_ratios(snapshot["params_before"], snapshot["params_after"], snapshot["grads"])[2]
        assert np.all(ratios == 1 / 32)
    elif kind in ("check", "batch"):  # half the tolerance: the nearest a relative error can be made to sit
        pairs = zip(snapshot["grads"], snapshot["numeric_grads"]) if kind == "check" else \
            zip(snapshot["eval_batch"], snapshot["eval_split"])
        worst = max(ref.relative_error(a, b) for a, b in pairs)
        assert np.isclose(worst, 5e-5 if kind == "check" else 5e-7, rtol=1e-3)
    else:
        z, a = snapshot["pre_acts"][-1], snapshot["inputs"][-1]
        gain = np.sqrt(np.mean(z * z)) / np.sqrt(np.mean(a * a))
        assert gain == (8.0 if kind == "gain-up" else 0.125)
    assert planted == set() and ref.diagnose(snapshot) == []
    assert {tuple(f) for f in ref.diagnose(probes.boundary_patient(rng, kind, over=True)[0])} != set()


@pytest.mark.parametrize("name", ["right_loops", "torch_answer"])
def test_right_answers_in_other_styles_get_full_marks(name):
    if name == "torch_answer":
        pytest.importorskip("torch")
    result = graded((FOLDER / f"{name}.py").read_text(), base=False)
    assert result.score == result.max_score, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(trap):
    result = graded((FOLDER / f"{trap.replace('-', '_')}.py").read_text())
    assert result.score < result.max_score
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


def test_a_trap_answer_is_named_through_the_sandbox(answer_file):
    result = grade_path(answer_file("gradient_clinic", "bn_downstream"))
    assert result.error is None and 0 < result.score < result.max_score
    assert {t.trap for t in result.tests if not t.passed} == {"bn-downstream"}, failures(result)


def test_a_non_strict_threshold_loses_the_threshold_check():
    """gain >= 8 instead of > 8: only the check at the thresholds sees it."""
    snippet = solution_source("gradient_clinic").split("def diagnose")[0] + "def diagnose" + \
        solution_source("gradient_clinic").split("def diagnose")[1].replace("if gain > 8:", "if gain >= 8:")
    result = graded(snippet, base=False)
    assert [t.name for t in result.tests if not t.passed] == [
        "diagnose at the thresholds: a gain of exactly 8 or 1/8, a median ratio of exactly 1/32 "
        "and errors half the tolerances are healthy, twice that is not"], failures(result)


def test_a_malformed_diagnosis_gets_a_sentence():
    result = graded("def diagnose(snapshot):\n    return [('frozen', 'layer one')]\n")
    feedback = next(t.feedback for t in result.tests if not t.passed)
    assert "each entry is [fault, layer]" in feedback and "Traceback" not in feedback


def test_seed_replays():
    a, b = (graded((FOLDER / "frozen_vs_detached.py").read_text(), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]


def test_a_huge_wrong_answer_is_shown_short():
    result = graded("def diagnose(snapshot):\n    return [['x' * 10000, i] for i in range(1000)]\n"
                    "def dead_relu_fraction(pre_acts):\n    return np.ones(100000)\n")
    assert all(len(t.feedback) < 3000 for t in result.tests), max(len(t.feedback) for t in result.tests)
