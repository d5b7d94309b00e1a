"""layernorm_backward graded end to end: right answers (numpy and PyTorch), each trap named
and costing only its own checks, other forms of each trap, the stub; and the question is
sound (`grade validate layernorm_backward --quick`; the kernels have their own test).

The solution, the stub and one trap answer go through the sandbox; the many
trap forms are graded in process (as `grade validate` grades trap answers), which runs the
same checks in a tenth of the time. The extra answers in tests/answers/layernorm_backward/
(right_*.py, wrong_*.py, torch_answer.py, with `# expect:` lines) are graded through the
sandbox by `grade validate`, that is by the first test here.
"""
from pathlib import Path
from types import SimpleNamespace

import pytest

from backprop_traps.grader.authoring.in_process import InProcessCaller, namespace_from_source, run_checks
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.engine.run import DEFAULT_SEED, grade_path
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, REPO, solution_source

ROOT = Path(__file__).resolve().parents[2]
TRAPS = ["stats-as-constants", "wrong-axis", "unbiased-variance", "dgamma-not-summed",
         "eps-outside-sqrt", "eps-missing"]
FORWARD = "def layernorm_forward(x, gamma, beta, eps):\n"
BACKWARD = "def layernorm_backward(dy, x, gamma, mean, rstd):\n"
RIGHT_FORWARD = {"mean": "x.mean(axis=1)", "xc": "x - mean[:, None]", "var": "(xc * xc).mean(axis=1)",
                 "rstd": "1.0 / np.sqrt(var + eps)", "y": "xc * rstd[:, None] * gamma + beta"}
RIGHT_BACKWARD = {"xhat": "(x - mean[:, None]) * rstd[:, None]", "dbeta": "dy.sum(axis=0)",
                  "dgamma": "(dy * xhat).sum(axis=0)", "g": "dy * gamma",
                  "mg": "g.mean(axis=1, keepdims=True)", "mgx": "(g * xhat).mean(axis=1, keepdims=True)",
                  "dx": "rstd[:, None] * (g - mg - xhat * mgx)"}
DGAMMA, DBETA = "dgamma against finite differences", "dbeta against finite differences"


def failures(result):
    return [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]


def graded(snippet: str, base: bool = True, seed: int = DEFAULT_SEED):
    """Grade the solution's code plus ``snippet`` (or ``snippet`` alone) in process."""
    source = (solution_source("layernorm_backward") + "\n\n" if base else "") + snippet
    tests = run_checks(load_question("layernorm_backward"), InProcessCaller(namespace_from_source(source)),
                       load_solution("layernorm_backward"), seed)
    return SimpleNamespace(tests=tests, score=sum(t.points for t in tests),
                           max_score=sum(t.max_points for t in tests))


def trap_answer(trap: str) -> str:
    return (ANSWERS / "layernorm_backward" / f"{trap.replace('-', '_')}.py").read_text()


def forward_with(**lines):
    body = {**RIGHT_FORWARD, **lines}
    return FORWARD + "".join(f"    {k} = {v}\n" for k, v in body.items()) + "    return y, mean, rstd\n"


def backward_with(**lines):
    body = {**RIGHT_BACKWARD, **lines}
    return BACKWARD + "".join(f"    {k} = {v}\n" for k, v in body.items()) + "    return dx, dgamma, dbeta\n"


def test_layernorm_backward_is_sound():
    report = validate_question("layernorm_backward", ROOT, quick=True)
    assert report.ok, report.text()


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / "11_layernorm_backward.ipynb")
    assert result.error is None
    assert result.score == result.max_score == 14
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / "11_layernorm_backward.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)
    assert not any("Traceback" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    """PyTorch's own layer_norm and native_layer_norm_backward (in process: importing torch
    in a sandbox child costs seconds and proves nothing more)."""
    pytest.importorskip("torch")
    result = graded(trap_answer("torch-answer"), base=False)
    assert result.score == result.max_score, failures(result)


def test_a_trap_answer_is_named_through_the_sandbox():
    result = grade_path(ANSWERS / "layernorm_backward" / "stats_as_constants.py")
    assert result.error is None and 0 < result.score < result.max_score
    assert {t.trap for t in result.tests if not t.passed} == {"stats-as-constants"}, failures(result)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_loses_points_and_is_named(trap):
    """Each trap answer is a complete wrong answer of its own (a `# question:` line, both functions)."""
    result = graded(trap_answer(trap), base=False)
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, failures(result)
    assert named <= {trap, None}, failures(result)


@pytest.mark.parametrize("trap, lost", [
    ("dgamma-not-summed", {DGAMMA, DBETA,
                           "edge sizes (N = 1, D = 1, D = 2) and a 64 x 300 batch: forward and backward"}),
    ("eps-outside-sqrt", {"forward on near-constant rows (where eps matters)",
                          "edge sizes (N = 1, D = 1, D = 2) and a 64 x 300 batch: forward and backward"}),
])
def test_a_trap_costs_only_its_own_checks(trap, lost):
    """A right dx with a wrong dgamma loses only the parameter checks (and the edge sizes,
    which grade everything); eps in the wrong place loses only where eps matters."""
    result = graded(trap_answer(trap), base=False)
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)


@pytest.mark.parametrize("trap, snippet", [
    ("stats-as-constants", backward_with(dx="rstd[:, None] * (g - mg)")),          # variance path lost
    ("stats-as-constants", backward_with(dx="rstd[:, None] * (g - xhat * mgx)")),  # mean path lost
    # the mean's path lost and D - 1 in the variance's: no formula matches, a probe names it
    ("stats-as-constants", backward_with(
        mgx="(g * xhat).sum(axis=1, keepdims=True) / (x.shape[1] - 1)", dx="rstd[:, None] * (g - xhat * mgx)")),
    ("wrong-axis", backward_with(mg="g.mean(axis=1)", mgx="(g * xhat).mean(axis=1)")),  # no keepdims
    ("wrong-axis", forward_with(xc="x - mean")),                                   # no keepdims in the forward
    ("unbiased-variance", forward_with(var="x.var(axis=1, ddof=1)")),
    ("dgamma-not-summed", backward_with(dgamma="(dy * xhat).mean(axis=0)")),
    ("dgamma-not-summed", backward_with(dbeta="dy[0]")),
    ("wrong-axis", backward_with(dgamma="(dy * xhat).sum(axis=1)")),
    ("eps-missing", backward_with(xhat="(x - mean[:, None]) / x.std(axis=1, keepdims=True)")),
])
def test_other_forms_of_each_trap_are_named(trap, snippet):
    result = graded(snippet)
    assert result.score < result.max_score
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


def test_a_dgamma_mean_is_caught_by_repeating_the_batch():
    """dgamma scaled so no formula matches: the probe (the batch given twice) still names it."""
    result = graded(backward_with(dgamma="(dy * xhat).mean(axis=0) * 1.5"))
    failed = {t.name: t for t in result.tests if not t.passed}
    assert failed[DGAMMA].trap == "dgamma-not-summed", failures(result)
    assert "given twice" in failed[DGAMMA].feedback
    assert DBETA not in failed


def test_returning_the_standard_deviation_says_rstd_is_its_reciprocal():
    result = graded(forward_with(y="xc / np.sqrt(var + eps)[:, None] * gamma + beta",
                                 rstd="np.sqrt(var + eps)"))
    first = next(t for t in result.tests if not t.passed)
    assert "rstd is its reciprocal" in first.feedback, failures(result)


def test_seed_replays():
    a, b = (graded(trap_answer("wrong-axis"), base=False, seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
