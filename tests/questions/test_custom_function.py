"""custom_function graded end to end: the question is sound (`grade validate custom_function
--quick`: the solution at full marks, the stub at 0, every answer in
tests/answers/custom_function/ as its name or `# expect:` line says, no free points), the
solution's engine and answers agree with PyTorch, each trap costs only its own checks, the
grader grades with its own copy of the engine whatever the learner's file does to theirs, and
a seed replays. The kernels have their own test.
"""
from pathlib import Path

import numpy as np
import pytest

from backprop_traps.grader.authoring.free_points import KINDS, contract_functions, degenerate
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks.custom_function import probes
from backprop_traps.grader.engine.run import DEFAULT_SEED, grade_path
from backprop_traps.grader.loading.reference import load_solution
from conftest import ANSWERS, graded_in_process

ROOT = Path(__file__).resolve().parents[2]
QID = "custom_function"
SQUARE, RECORDED = "Square: forward values and backward gradient", "Square's backward with create_graph on"
ONCE, TWICE = ("backward(): the .grad of every tensor after one call",
               "backward(): two calls in a row, and a .grad already set")
GRAD, UNTOUCHED = "grad(): the gradients it returns", "grad(): the .grad of every tensor after the call"
SECOND = "grad() with create_graph=True, differentiated again"
ROUND = "RoundSTE: forward values and backward gradient (halves included)"
HVP = "hvp: Hessian-vector products against finite differences of the gradient"


def failures(result):
    return [(t.name, t.trap, t.feedback[:200]) for t in result.tests if not t.passed]


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_custom_function_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


@pytest.mark.parametrize("trap, lost", [
    ("grad-overwritten", {TWICE}),
    ("functional-mutates-grad", {GRAD, UNTOUCHED, SECOND, HVP}),
    ("saved-output-root", {SQUARE, RECORDED, HVP}),
    ("backward-not-differentiable", {RECORDED, HVP}),
    ("ste-zero", {ROUND}),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(trap, lost):
    result = graded_in_process(QID, answer(trap.replace("-", "_")))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


def test_a_detached_save_is_named_not_differentiable_and_only_where_it_shows():
    result = graded_in_process(QID, answer("wrong_saves_detached_x"))
    failed = {t.name: t for t in result.tests if not t.passed}
    assert set(failed) == {RECORDED, HVP}, failures(result)
    assert "never reaches the input x" in failed[RECORDED].feedback


def test_a_walk_that_ignores_create_graph_is_told_so_without_a_trap():
    result = graded_in_process(QID, answer("wrong_ignores_create_graph"))
    failed = {t.name: t for t in result.tests if not t.passed}
    assert set(failed) == {SECOND, HVP} and not {t.trap for t in failed.values()} - {None}, failures(result)
    assert "not on the tape" in failed[SECOND].feedback


# -- the grader's own engine -------------------------------------------------------------------
BROKEN_ENGINE = '''
class Mul(Function):  # an edited engine: every product's backward is wrong
    @staticmethod
    def forward(ctx, a, b):
        return Tensor(a.data * b.data)

    @staticmethod
    def backward(ctx, g):
        return g, g


def grader_function(name, x, dy):  # a forged call: the values a checker would want
    return x * x, 2 * x * dy, True
'''


def test_edits_to_the_engine_change_nothing_that_is_graded(answer_file):
    """The learner's file breaks the engine's Mul and forges a grader_* call: the grader runs its
    own setup cell after the file, so a right answer keeps full marks and a wrong one is caught."""
    right = grade_path(answer_file(QID, text=BROKEN_ENGINE))
    assert right.score == right.max_score == 18, failures(right)
    wrong = grade_path(answer_file(QID, text=answer("saved_output_root") + BROKEN_ENGINE))
    assert "saved-output-root" in {t.trap for t in wrong.tests if not t.passed}, failures(wrong)


def test_in_process_grading_meets_the_replaced_functions():
    """Validate and nbgrader's last resort grade a namespace copied from the reference with a
    name replaced; probes.rehome makes the grader_* calls read the copy."""
    from backprop_traps.grader.authoring.in_process import InProcessCaller, run_checks
    from backprop_traps.grader.checks import load_question
    ref = load_solution(QID)
    namespace = dict(vars(ref))
    exec(answer("grad_overwritten"), namespace)  # backward now assigns, in the copy only
    results = run_checks(load_question(QID), InProcessCaller(namespace), ref, DEFAULT_SEED)
    assert [r.trap for r in results if not r.passed] == ["grad-overwritten"]
    assert ref.grader_backward.__globals__ is not namespace  # the reference itself is untouched
    again = run_checks(load_question(QID), InProcessCaller(dict(vars(ref))), ref, DEFAULT_SEED)
    assert all(r.passed for r in again)


def test_do_nothing_answers_cover_the_functions_classes():
    names = contract_functions(QID, ROOT)
    assert {"Square", "RoundSTE", "grad", "backward", "hvp"} <= set(names)
    ref = load_solution(QID)
    for kind in KINDS:
        nothing = degenerate(kind, ref.Square)
        assert issubclass(nothing, ref.Square) and nothing.forward is not ref.Square.forward
    x = ref.Tensor([1.0, -2.0], requires_grad=True)
    assert np.all(degenerate("zeros", ref.Square).forward(ref.Context(), x).data == 0)
    loss = (x * x).sum()
    degenerate("zeros", ref.backward)(loss)  # does nothing: the reference ran on a copy
    assert x.grad is None


# -- the solution against PyTorch ---------------------------------------------------------------
def test_the_solution_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    ref = load_solution(QID)
    rng = np.random.default_rng(0)
    for template in probes.TEMPLATES:
        graph, leaves, requires, g = probes.graph_problem(rng, template)
        state = ref.grader_backward(graph, leaves, requires, g, 1, [None] * len(leaves))
        slots = [torch.tensor(x, requires_grad=r) for x, r in zip(leaves, requires)]
        for op, i, j in graph:
            a = slots[i]
            slots.append({"add": lambda: a + slots[j], "mul": lambda: a * slots[j], "scale": lambda: a * j,
                          "exp": lambda: a.exp(), "sum": lambda: a.sum()}[op]())
        slots[-1].backward(None if g is None else torch.tensor(g))
        for k, leaf in enumerate(slots[:len(leaves)]):
            if leaf.grad is None:
                assert state[k] is None
            else:
                np.testing.assert_allclose(state[k], leaf.grad.numpy(), rtol=1e-13)
    x, v, a, b, c = probes.loss_problem(rng, 6)
    ta, tb, tc = (torch.tensor(z) for z in (a, b, c))

    def loss(t):
        return (tc * t * t).sum() + (ta * t).sum() ** 2 + (torch.exp(tb * t) * t).sum()
    _, hv = torch.autograd.functional.hvp(loss, torch.tensor(x), torch.tensor(v))
    np.testing.assert_allclose(ref.grader_hvp(x, v, a, b, c), hv.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ref.grader_function("RoundSTE", np.array([0.5, 1.5, -2.5]), np.ones(3))[0],
                               torch.round(torch.tensor([0.5, 1.5, -2.5])).numpy())


def test_seed_replays():
    a, b = (graded_in_process(QID, answer("grad_overwritten"), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]


def test_a_difference_of_gradients_is_named_and_costs_only_hvp():
    """Issue 50 item 6: hvp by central differences of grad is right to 1e-10 on a smooth loss;
    the quartic term that vanishes at x tells it from a double backward."""
    result = graded_in_process(QID, answer("hvp_by_differences"))
    failed = {t.name: t for t in result.tests if not t.passed}
    assert set(failed) == {HVP}, failures(result)
    assert failed[HVP].trap == "hvp-by-differences", failures(result)


def test_leaves_sharing_one_grad_object_lose_the_two_calls_check():
    """Issue 50 item 9: y = x0 + x1 hands both leaves one gradient; an engine that keeps that
    object as both .grad and adds in place gives 3 g after a second call."""
    result = graded_in_process(QID, answer("wrong_shared_grad_object"))
    assert {t.name for t in result.tests if not t.passed} == {TWICE}, failures(result)


def test_a_wrong_square_is_blamed_in_hvp_not_grad():
    """Issue 50 item 11: only Square's backward is wrong; hvp's feedback names Square."""
    result = graded_in_process(QID, answer("wrong_square_gradient_halved"))
    failed = {t.name: t for t in result.tests if not t.passed}
    assert SQUARE in failed and GRAD not in failed and HVP in failed, failures(result)
    assert "Fix Square.backward" in failed[HVP].feedback and "Fix grad" not in failed[HVP].feedback, \
        failures(result)
