"""Checks cost what they teach (issue 47, item 4): the searches that only describe a failure (the
smallest failing input, the upstream replay) never run for a right answer, and a wrong one pays
at most ``feedback.SHARE`` of what is left of its time budget, ``feedback.SECONDS`` at most."""
from types import SimpleNamespace

import numpy as np
import pytest

from backprop_traps.grader.engine import feedback, shrink, upstream
from backprop_traps.grader.sandbox.channel import CallResult
from backprop_traps.grader.sandbox.limits import Limits


class SlowSandbox:
    """Each call of the learner's function takes one second of the budget, and answers right."""

    def __init__(self, spent: float, total: float = 60.0):
        self.spent, self.limits, self.calls = spent, Limits(total_seconds=total), 0

    def call(self, fn, *args, **how):
        self.calls += 1
        self.spent += 1.0
        return CallResult(True, value=args[0] * 2)


def ctx_for(sandbox):
    return SimpleNamespace(sandbox=sandbox, question=SimpleNamespace(shrink={"double": {"N": [(0, 0)]}}),
                           last_calls={"double": (np.ones(40),)}, ref=SimpleNamespace(double=lambda x: x * 2),
                           output_names={}, locate=lambda *a: None)


@pytest.mark.parametrize("spent, total, most", [(0.0, 60.0, 3), (55.0, 60.0, 1), (0.0, 10.0, 1)])
def test_the_smallest_input_search_spends_a_share_of_what_is_left(spent, total, most):
    box = SlowSandbox(spent, total)
    assert feedback.allowance(box) == min(feedback.SECONDS, feedback.SHARE * (total - spent))
    assert shrink.smallest(ctx_for(box), "double", "out") is None  # every cut answers right
    assert box.calls == most


def test_nothing_is_left_nothing_is_searched():
    box = SlowSandbox(60.0)
    assert feedback.allowance(box) == 0.0
    feedback.smallest_failure(box, np.random.default_rng(0), "double", lambda rng, n: {"x": np.ones(n)},
                              [1, 2, 3], lambda x: x * 2)
    assert box.calls == 0  # the budget is checked before every call, the first included


def test_a_right_answer_never_pays_for_feedback(tmp_path, monkeypatch):
    from backprop_traps.grader.engine.run import grade_path
    from conftest import solution_source

    def never(*args, **kwargs):
        raise AssertionError("a search for feedback ran for a right answer")
    for module, name in ((upstream, "explain"), (shrink, "smallest"), (feedback, "smallest_failure")):
        monkeypatch.setattr(module, name, never)
    for question in ("routing_trap", "grad_accumulation"):  # grad_accumulation has downstream functions
        path = tmp_path / f"{question}.py"
        path.write_text(f"# question: {question}\n" + solution_source(question))
        result = grade_path(path, practice=False)
        assert result.score == result.max_score, [t.feedback for t in result.tests if not t.passed]
