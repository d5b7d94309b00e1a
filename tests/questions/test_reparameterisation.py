"""reparameterisation graded end to end: right answers (numpy and PyTorch), each trap named and
costing only its own checks, other forms of each trap, probes that name a trap no formula
matches, the stub; and the question is sound (`grade validate reparameterisation --quick`; the
kernels have their own test).

The solution, the stub and one trap answer go through the sandbox; the many trap forms are
graded in process (as `grade validate` grades trap answers), with the solution's setup cell
run after the answer, as `grade` runs it (the question has ``grader_setup``). The extra
answers in tests/answers/reparameterisation/ (right_*.py, wrong_*.py, torch_answer.py, with
`# expect:` lines) are graded through the sandbox by `grade validate`, that is by the first
test here.
"""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from backprop_traps.grader.authoring.in_process import InProcessCaller, namespace_from_source, run_checks
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.checks.reparameterisation.probes import moment_matched_noise
from backprop_traps.grader.engine.run import DEFAULT_SEED, grade_path
from backprop_traps.grader.loading.reference import load_solution, setup_code
from conftest import ANSWERS, REPO, solution_source

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "reparameterisation"
TRAPS = ["sample-as-constant", "sigma-grad-from-z", "score-missing-sigma-term",
         "temperature-after-softmax", "backward-missing-temperature", "overflow"]
PATHWISE = ["pathwise: per-sample gradients through z = mu + sigma * eps",
            "pathwise: the mean is the exact gradient for quadratic and cubic f"]
SCORE = ["score function: f(z) times the gradient of log N(z; mu, sigma^2)",
         "score function: zero mean for a constant f, the exact gradient for quadratic and cubic f"]
EDGES = "both estimators on edge cases: S = 1, eps = 0, constant and linear f, sigma = 1e-3 and 50"
RATIO = "variance ratio: score function over pathwise, per-sample variances"
FORWARD = ["Gumbel-softmax forward: softmax((logits + gumbel) / tau), row by row",
           "Gumbel-softmax forward at a small temperature and with huge logits"]
BACKWARD = "Gumbel-softmax backward: the Jacobian by finite differences"
GUMBEL_EDGES = "Gumbel-softmax edge cases: K = 1, N = 1, tau = 1, tied logits, a 64 x 300 batch"


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    """Grade the solution's code plus ``snippet`` (or ``snippet`` alone) in process; the setup
    cell (f, f_prime) runs last, as the grader's copy does in the sandbox."""
    source = (solution_source(QUESTION) + "\n\n" if base else "") + snippet + "\n\n" + setup_code(QUESTION)
    tests = run_checks(load_question(QUESTION), InProcessCaller(namespace_from_source(source)),
                       load_solution(QUESTION), seed)
    return SimpleNamespace(tests=tests, score=sum(t.points for t in tests),
                           max_score=sum(t.max_points for t in tests))


def trap_answer(trap: str) -> str:
    return (ANSWERS / QUESTION / f"{trap.replace('-', '_')}.py").read_text()


def test_reparameterisation_is_sound():
    report = validate_question(QUESTION, ROOT, quick=True)
    assert report.ok, report.text()


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "14_reparameterisation.ipynb")
    assert result.error is None
    assert result.score == result.max_score == 23
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "14_reparameterisation.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)
    assert not any("Traceback" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    """autograd through the sample, Normal.log_prob, torch.softmax and its backward op (in
    process here; `grade validate` grades the same file through the sandbox)."""
    pytest.importorskip("torch")
    result = graded(trap_answer("torch-answer"), base=False)
    assert result.score == result.max_score, failures(result)


def test_a_trap_answer_is_named_through_the_sandbox():
    result = grade_path(ANSWERS / QUESTION / "score_missing_sigma_term.py")
    assert result.error is None and 0 < result.score < result.max_score
    assert {t.trap for t in result.tests if not t.passed} == {"score-missing-sigma-term"}, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(trap):
    """Each trap answer is a complete wrong answer of its own (a `# question:` line, every function)."""
    result = graded(trap_answer(trap), base=False)
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, failures(result)
    assert named <= {trap, None}, failures(result)


@pytest.mark.parametrize("trap, lost", [
    ("sample-as-constant", {*PATHWISE, EDGES, RATIO}),
    ("score-missing-sigma-term", {*SCORE, EDGES, RATIO}),
    ("temperature-after-softmax", {*FORWARD, GUMBEL_EDGES}),
    ("backward-missing-temperature", {BACKWARD, GUMBEL_EDGES}),
    ("overflow", {FORWARD[1]}),
])
def test_a_trap_costs_only_its_own_checks(trap, lost):
    """A wrong pathwise estimator costs the pathwise checks (and the ratio and the edge cases,
    which use it), never the Gumbel-softmax ones; a missing max costs only the small temperature."""
    result = graded(trap_answer(trap), base=False)
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)


@pytest.mark.parametrize("trap, snippet", [
    ("sample-as-constant", "def pathwise_grad(mu, sigma, eps, coef):\n"
                           "    return np.zeros_like(eps), f_prime(mu + sigma * eps, coef) * eps\n"),
    ("sigma-grad-from-z", "def pathwise_grad(mu, sigma, eps, coef):\n"
                          "    z = mu + sigma * eps\n"
                          "    return f_prime(z, coef), f_prime(z, coef) * (z - mu)\n"),
    ("score-missing-sigma-term", "def score_function_grad(mu, sigma, eps, coef):\n"
                                 "    fz = f(mu + sigma * eps, coef)\n"
                                 "    return fz * eps / sigma, fz * eps ** 2 / sigma\n"),
    ("temperature-after-softmax", "def gumbel_softmax_forward(logits, gumbel, tau):\n"
                                  "    h = logits + gumbel\n"
                                  "    e = np.exp(h - h.max(axis=1, keepdims=True))\n"
                                  "    return (e / e.sum(axis=1, keepdims=True)) ** (1.0 / tau)\n"),
    ("backward-missing-temperature", "def gumbel_softmax_backward(dy, y, tau):\n"
                                     "    return y * (dy - (dy * y).sum(axis=1, keepdims=True)) * tau\n"),
])
def test_other_forms_of_each_trap_are_named(trap, snippet):
    result = graded(snippet)
    assert result.score < result.max_score
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


@pytest.mark.parametrize("trap, snippet, shown", [
    # tau multiplies the probabilities: no formula matches, the probe row's odds are softmax's
    ("temperature-after-softmax", "def gumbel_softmax_forward(logits, gumbel, tau):\n"
                                  "    h = logits + gumbel\n"
                                  "    e = np.exp(h - h.max(axis=1, keepdims=True))\n"
                                  "    return e / e.sum(axis=1, keepdims=True) * tau\n", "sums to"),
    # a temperature hard-coded in the backward: dlogits does not move with tau
    ("backward-missing-temperature", "def gumbel_softmax_backward(dy, y, tau):\n"
                                     "    return y * (dy - (dy * y).sum(axis=1, keepdims=True)) / 0.5\n",
     "at tau = 0.25"),
])
def test_a_probe_names_what_no_formula_matches(trap, snippet, shown):
    result = graded(snippet)
    failed = [t for t in result.tests if not t.passed]
    assert failed and all(t.trap == trap for t in failed), failures(result)
    assert any(shown in t.feedback for t in failed)


def test_a_wrong_estimator_names_its_trap_in_the_ratio_check():
    """variance_ratio itself is right; the score function under it misses -1/sigma."""
    result = graded(trap_answer("score-missing-sigma-term"), base=False)
    ratio = next(t for t in result.tests if t.name == RATIO)
    assert not ratio.passed and ratio.trap == "score-missing-sigma-term"


def test_returning_the_mean_says_one_estimate_per_sample():
    result = graded("def pathwise_grad(mu, sigma, eps, coef):\n"
                    "    z = mu + sigma * eps\n"
                    "    return f_prime(z, coef).mean(), (f_prime(z, coef) * eps).mean()\n")
    first = next(t for t in result.tests if not t.passed)
    assert "one estimate per sample" in first.feedback, failures(result)


def test_the_closed_form_noise_has_the_normal_moments():
    for seed in range(20):
        eps = moment_matched_noise(np.random.default_rng(seed), pairs=3 + seed % 5)
        moments = [np.mean(eps ** k) for k in range(1, 6)]
        np.testing.assert_allclose(moments, [0, 1, 0, 3, 0], atol=1e-12)


def test_seed_replays():
    a, b = (graded(trap_answer("sigma-grad-from-z"), base=False, seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
