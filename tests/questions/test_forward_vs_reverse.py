"""forward_vs_reverse graded end to end: right answers, each trap, the stub, the counter.

The cost checks read multiply-adds counted by the grader's copy of the notebook's setup cell,
which the sandbox runs after the learner's code (``Question.grader_setup``); the last tests
pin that mechanism down.
"""
import numpy as np
import pytest

from conftest import ANSWERS, REPO, solution_source
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.loading.reference import load_solution, setup_code
from backprop_traps.grader.sandbox.process import Sandbox

QUESTION = "forward_vs_reverse"
TRAPS = ["matrix-matrix-chain", "wrong-order", "no-transpose"]
COST_CHECKS = {"the cost of one JVP and one VJP, in multiply-adds",
               "the gradient of a scalar output by reverse mode: its cost in multiply-adds",
               "one input, many outputs: forward mode costs one pass"}


def failed(result):
    return {t.name: t for t in result.tests if not t.passed}


def test_solution_gets_full_marks():
    result = grade_path(REPO / "solutions" / f"07_{QUESTION}.ipynb")
    assert result.error is None
    assert result.score == result.max_score == 12
    assert all(t.passed and t.trap is None for t in result.tests)


def test_stub_gets_zero_with_not_implemented_feedback():
    result = grade_path(REPO / "exercises" / f"07_{QUESTION}.ipynb")
    assert result.error is None and result.score == 0
    assert all("not implemented yet" in t.feedback for t in result.tests)


def test_torch_answer_gets_full_marks():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / QUESTION / "torch_answer.py")
    assert result.score == result.max_score, [t.feedback for t in result.tests if not t.passed]


@pytest.mark.parametrize("trap, answer", [(t, t.replace("-", "_")) for t in TRAPS]
                         + [("wrong-order", "jvp_wrong_order")])
def test_each_trap_loses_points_and_is_named(answer_file, trap, answer):
    result = grade_path(answer_file(QUESTION, answer))
    assert result.score < result.max_score
    named = {t.trap for t in result.tests if not t.passed}
    assert trap in named, [(t.name, t.trap, t.feedback) for t in result.tests if not t.passed]
    assert named <= set(TRAPS) | {None}


def test_matrix_products_keep_the_values_and_lose_the_cost_checks_only(answer_file):
    result = grade_path(answer_file(QUESTION, "matrix_matrix_chain"))
    assert set(failed(result)) == COST_CHECKS - {"one input, many outputs: forward mode costs one pass"}


def test_products_that_bypass_the_helpers_are_reported(answer_file):
    result = grade_path(answer_file(QUESTION, "bypasses_counter"))
    fails = failed(result)
    assert "forward pass: y = A_k ... A_1 x, one matvec per layer" in fails
    assert all("bypass the counting helpers" in t.feedback and t.trap is None for t in fails.values())


def test_a_jacobian_built_by_the_other_mode_is_priced_as_such(answer_file):
    fails = failed(grade_path(answer_file(QUESTION, "jacobian_by_the_other_mode")))
    assert set(fails) == COST_CHECKS - {"the cost of one JVP and one VJP, in multiply-adds"}
    assert all("exactly" in t.feedback and "mode's price" in t.feedback for t in fails.values())


def test_the_learners_own_helpers_are_replaced_by_the_graders(answer_file):
    """Helpers that count nothing (an edited setup cell) change nothing: the grader's run after."""
    result = grade_path(answer_file(QUESTION, "redefines_helpers"))
    assert result.score == result.max_score, [t.feedback for t in result.tests if not t.passed]


def test_sandbox_runs_helpers_after_the_source_and_after_every_reload():
    source = ("import os\n"
              "def helper():\n    return 'learner'\n"
              "def which():\n    return helper()\n"
              "def exits():\n    os._exit(3)\n"
              "def calls_bad():\n    return bad()\n")
    helpers = "def helper():\n    return 'grader'\ndef bad():\n    raise ValueError('no')\n"
    with Sandbox(source, helpers=helpers) as box:
        assert box.start().ok
        assert box.call("which").value == "grader"
        assert not box.call("exits").ok  # the child dies; the next call starts a fresh one
        assert box.call("which").value == "grader"
        error = box.call("calls_bad").error
        assert "ValueError: no" in error and "line 9: `return bad()`" in error  # the learner's line
    with Sandbox(source) as box:  # without helpers, nothing changes
        assert box.call("which").value == "learner"


def test_setup_code_is_the_notebooks_setup_cell():
    code = setup_code(QUESTION)
    assert "def take_multiply_adds" in code and code in solution_source(QUESTION)


def test_reference_agrees_with_torch_func():
    """An oracle outside the kit: PyTorch's own forward and reverse mode on the same chain."""
    torch = pytest.importorskip("torch")
    ref = load_solution(QUESTION)
    rng = np.random.default_rng(0)
    dims = [5, 8, 3, 7, 4]
    As = [rng.standard_normal((dims[i + 1], dims[i])) for i in range(len(dims) - 1)]
    x, v, u = rng.standard_normal(5), rng.standard_normal(5), rng.standard_normal(4)

    def f(z):
        for A in As:
            z = torch.from_numpy(A) @ z
        return z

    t = torch.from_numpy
    _, jv = torch.func.jvp(f, (t(x),), (t(v),))
    _, pullback = torch.func.vjp(f, t(x))
    np.testing.assert_allclose(ref.chain_jvp(As, v), jv.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ref.chain_vjp(As, u), pullback(t(u))[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(ref.jacobian_forward(As), torch.func.jacfwd(f)(t(x)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ref.jacobian_reverse(As), torch.func.jacrev(f)(t(x)).numpy(), rtol=1e-12)


def test_forward_vs_reverse_is_sound():
    report = validate_question(QUESTION, REPO, quick=True)
    assert report.ok, report.text()
