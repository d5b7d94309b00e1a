"""`grade validate`'s boundary and memory-path rules (issue 24): a question cannot ship without a
boundary probe for each kink and a memory check on each path of its memory promise."""
from __future__ import annotations

import types

import numpy as np

from backprop_traps.grader.authoring.boundaries import check_boundaries
from backprop_traps.grader.authoring.findings import FAIL, QuestionReport
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.engine.question import Question

REF = types.SimpleNamespace(relu=lambda z: np.maximum(z, 0.0))


def verdict(question, code="") -> QuestionReport:
    report = QuestionReport(question.id)
    check_boundaries(report, question, REF, 1234, code)
    return report


def problems(report) -> str:
    return " ".join(d for f in report.findings if f.status == FAIL for d in [f.text, *f.details])


def relu_question(**declared) -> Question:
    q = Question("relu_layer", "A ReLU", **declared)

    @q.check("values away from the kink", points=1)
    def values(ctx):
        ctx.call("relu", np.array([1.0, -2.0]))
    return q


def test_a_question_that_declares_no_kinks_fails_and_is_pointed_at_its_solution():
    report = verdict(relu_question(), "def relu(z):\n    return np.maximum(z, 0.0)\n")
    assert not report.ok and "declares no kinks" in problems(report) and "np.maximum" in problems(report)


def test_a_declared_kink_without_a_boundary_probe_fails():
    report = verdict(relu_question(kinks={"relu-at-0": "z exactly 0"}))
    assert not report.ok and "kink 'relu-at-0'" in problems(report) and "no boundary probe" in problems(report)


def test_a_probed_kink_passes_and_a_typo_is_caught():
    q = relu_question(kinks={"relu-at-0": "z exactly 0"})

    @q.check("z exactly 0", points=1, kinks=("relu-at-0",))
    def at_zero(ctx):
        ctx.call("relu", np.array([0.0]))
    assert verdict(q).ok

    @q.check("a typo", points=1, kinks=("relu-at-zero",))
    def typo(ctx):
        ctx.call("relu", np.array([0.0]))
    assert "does not declare" in problems(verdict(q))


def test_memory_measured_needs_its_paths_and_each_path_a_measurement():
    q = relu_question(kinks={})

    @q.check("peak memory", points=1)
    def peak(ctx):
        ctx.call("relu", np.zeros(8), measure_memory=True)
    text = problems(verdict(q))
    assert "declares no memory_paths" in text and "declares no path" in text

    q = relu_question(kinks={}, memory_paths=("small", "large"))

    @q.check("peak memory, small", points=1, memory=("small",))
    def small(ctx):
        ctx.call("relu", np.zeros(8), measure_memory=True)
    text = problems(verdict(q))
    assert "memory path 'large' is never measured" in text


def test_every_shipped_question_declares_its_kinks_and_attention_measures_both_paths():
    from conftest import REPO
    from backprop_traps.grader.loading.questions import solution_notebooks
    for question in solution_notebooks(REPO):
        assert load_question(question).kinks is not None, question
    attention = load_question("attention_backward")
    assert set(attention.memory_paths) == {"causal=False", "causal=True"}
    assert all(set(c.memory) == set(attention.memory_paths) for c in attention.checks if c.memory)
