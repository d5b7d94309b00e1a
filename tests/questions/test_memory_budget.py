"""memory_budget graded end to end: the question is sound (`grade validate memory_budget
--quick`), each trap costs only its own checks, the plan's judge agrees with the solution,
the memory budget holds the solution at every depth and not a stack that keeps its pairs, the
PyTorch answer gets full marks through the sandbox, a platform without a meter gives no
memory points, and a seed replays. The kernels have their own test.
"""
import itertools
from pathlib import Path

import numpy as np
import pytest

from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks import memory_budget
from backprop_traps.grader.checks.memory_budget import probes, traps
from backprop_traps.grader.checks.memory_budget.probes import MEM_D, MEM_N
from backprop_traps.grader.engine.context import CheckContext
from backprop_traps.grader.engine.question import Fail
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.loading.reference import load_solution
from backprop_traps.grader.sandbox.process import CallResult, Sandbox
from conftest import ANSWERS, graded_in_process, solution_source

ROOT = Path(__file__).resolve().parents[2]
QID = "memory_budget"
HAND, EXACT, EDGES = ("checkpoint_plan on hand-made instances",
                      "checkpoint_plan against an exact search (random instances)",
                      "checkpoint_plan at the edges of the budget")
INVERSE = "rev_inverse: the inputs rebuilt from the outputs"
BACKWARD = "rev_backward: gradients from the outputs alone, against finite differences"
STACK = "revnet_loss_and_grads: a stack of blocks against finite differences"
MEMORY = "peak memory of a stack of 32 blocks within budget"
OFFLOAD = "offload_step_time: transfer and step time, overlapped or not"
HALF = MEM_N * MEM_D * 8


def failures(result):
    return [(t.name, t.trap, t.feedback[:200]) for t in result.tests if not t.passed]


def answer(name: str) -> str:
    return (ANSWERS / QID / f"{name}.py").read_text()


def test_memory_budget_is_sound():
    report = validate_question(QID, ROOT, quick=True)
    assert report.ok, report.text()


@pytest.mark.parametrize("trap, lost", [
    ("greedy-ratio", {HAND, EXACT}),
    ("over-budget", {HAND, EXACT}),
    ("inverse-order", {INVERSE}),
    ("cross-term-dropped", {BACKWARD, STACK, MEMORY}),
    ("one-way", {OFFLOAD}),
    ("overlap-adds", {OFFLOAD}),
])
def test_each_trap_is_named_and_costs_only_its_own_checks(trap, lost):
    result = graded_in_process(QID, answer(trap.replace("-", "_")))
    assert {t.name for t in result.tests if not t.passed} == lost, failures(result)
    assert trap in {t.trap for t in result.tests if not t.passed}, failures(result)


def test_storing_every_pair_is_named_through_the_sandbox(answer_file):
    result = grade_path(answer_file(QID, "stores_everything"))
    assert [(t.name, t.trap) for t in result.tests if not t.passed] == [(MEMORY, "stores-everything")], \
        failures(result)


def test_a_budget_one_short_is_not_taken_for_greedy():
    """Greedy's plan can be the best plan one unit under the budget: the trap is named only when
    the answer matches greedy on every probe instance."""
    result = graded_in_process(QID, answer("wrong_plan_budget_strict"))
    assert {t.name for t in result.tests if not t.passed} == {HAND, EXACT, EDGES}, failures(result)
    assert not {t.trap for t in result.tests if not t.passed} - {None}, failures(result)
    for z, c, b in memory_budget.greedy_probes():  # the probes' own promise
        best = [probes.exact_search(z, c, budget)[0] for budget in (b - 2, b - 1, b, b + 1)]
        for g in traps.greedy_plans(z, c, b):
            assert not any(np.isclose(float(c[~g].sum()), x) for x in best)


def test_the_exact_search_and_the_solution_agree():
    ref = load_solution(QID)
    rng = np.random.default_rng(0)
    for _ in range(60):
        sizes, costs, budget = probes.plan_problem(rng, int(rng.integers(1, 11)))
        keep = ref.checkpoint_plan(sizes, costs, budget)
        best, plan = probes.exact_search(sizes, costs, budget)
        assert sizes[keep].sum() <= budget and sizes[plan].sum() <= budget
        assert np.isclose(costs[~keep].sum(), best)
    brute = min(sum(c for c, k in zip([3.0, 2.5, 1.0, 2.0], m) if not k)
                for m in itertools.product([0, 1], repeat=4) if sum(s for s, k in zip([4, 3, 5, 6], m) if k) <= 7)
    assert brute == probes.exact_search(np.array([4, 3, 5, 6]), np.array([3.0, 2.5, 1.0, 2.0]), 7)[0] == 3.0


def test_the_torch_answer_gets_full_marks_through_the_sandbox():
    pytest.importorskip("torch")
    result = grade_path(ANSWERS / QID / "torch_answer.py")
    assert result.score == result.max_score == 20, failures(result)


def test_the_budget_holds_the_solution_at_every_depth_and_not_a_stack_that_keeps_its_pairs():
    """Peak (in halves) stays flat with the number of blocks for the solution; keeping every
    pair grows with it and is over budget by more than 2x at L = 32."""
    rng = np.random.default_rng(1)
    budget = probes.memory_budget(32, MEM_N, MEM_D)
    with Sandbox(solution_source(QID)) as sandbox:
        sandbox.expect_measured_calls(3)
        assert sandbox.start().ok
        for L in (4, 32, 64):
            stack = probes.stack(rng, L, MEM_N, MEM_D, scale=0.5)
            peak = sandbox.call("revnet_loss_and_grads", *stack, measure_memory=True).memory["peak"]
            if peak is None:
                pytest.skip("no memory meter on this machine")
            assert peak <= probes.memory_budget(L, MEM_N, MEM_D) - 2 * HALF, (L, peak / HALF)
    with Sandbox(solution_source(QID) + answer("stores_everything")) as sandbox:
        sandbox.expect_measured_calls(1)
        assert sandbox.start().ok
        stack = probes.stack(rng, 32, MEM_N, MEM_D, scale=0.5)
        peak = sandbox.call("revnet_loss_and_grads", *stack, measure_memory=True).memory["peak"]
    assert peak > 2 * budget, peak / HALF


def test_the_documented_budget_is_the_graded_one():
    budget = probes.memory_budget(probes.MEM_L, MEM_N, MEM_D)
    assert f"{budget / 2 ** 20:.1f} MiB" in memory_budget.__doc__
    assert f"(4 + {probes.SLACK}) * A" in memory_budget.__doc__


class _NoMeter:
    """Answers with the reference, but without a memory measurement (no trustworthy meter)."""

    def call(self, fn, *args, echo_args=False, measure_memory=False):
        value = getattr(load_solution(QID), fn)(*args)
        memory = {"peak": None, "unavailable": "no cgroup this grader may use"}
        return CallResult(True, value=value, memory=memory if measure_memory else None)


def test_no_memory_points_where_memory_cannot_be_measured():
    ctx = CheckContext(memory_budget.QUESTION, _NoMeter(), load_solution(QID), 1, MEMORY)
    with pytest.raises(Fail) as failure:
        memory_budget.memory(ctx)
    assert "cannot be measured on this platform" in failure.value.feedback and failure.value.trap is None


def test_seed_replays():
    a, b = (graded_in_process(QID, answer("greedy_ratio"), seed=7) for _ in range(2))
    assert [t.to_json() for t in a.tests] == [t.to_json() for t in b.tests]
