"""Measured calls (``Sandbox.call(..., measure_memory=True)``) run in a measuring child: one
whose memory baseline was read before any learner code beyond its imports ran. A question
that measures memory starts its sandbox that way (``expect_measured_calls``), so every call,
measured or not, goes on in one child; each measured call is counted in a cgroup of its own,
with whatever earlier calls still hold, and memory they let go of is not counted. The same
holds for the practice meter, where a learner's own practice has no cgroup: these sandboxes
are a learner's (``practice=True``), so every mode measures."""
import os

import pytest

from backprop_traps.grader.sandbox.process import Sandbox
from test_sandbox_layers import FAST, GROW, expected_meter, mode  # noqa: F401 (the fixture: every isolation level)

TOKENED = GROW + ("import os\nTOKEN = float(int.from_bytes(os.urandom(6), 'big'))\n"
                  "print('loaded')\n"
                  "_KEPT = []\n"
                  "def token(mb):\n    return TOKEN\n"
                  "def keep(mb):\n    _KEPT.append(np.ones(int(mb) * 131072))\n    return 0.0\n"
                  "def let_go(mb):\n    _KEPT.clear()\n    return 0.0\n")
MiB = 2 ** 20


def peak(result, mode):
    assert result.ok, result.error
    assert result.memory["meter"] == expected_meter(mode, practice=True), (mode, result.memory)
    return result.memory["peak"]


def Practice(source, limits=FAST):
    return Sandbox(source, limits, practice=True)


def test_a_question_that_measures_memory_runs_in_one_child(mode):
    with Practice(TOKENED) as box:
        box.expect_measured_calls(2)
        assert box.start().ok
        first = box.call("token", 1)
        big = box.call("grow", 64, measure_memory=True)
        small = box.call("nothing", 64, measure_memory=True)
        after = box.call("token", 1)
        output = box.output
    assert first.ok and after.ok and after.value == first.value  # the same child throughout
    assert output.count("loaded") == 1, output
    big, small = peak(big, mode), peak(small, mode)
    assert 60 * MiB < big < 80 * MiB, big
    assert small < 8 * MiB, small  # what the call before let go of is not counted


@pytest.mark.parametrize("kept_by", ["an unmeasured call", "a measured call"])
def test_memory_an_earlier_call_keeps_is_counted_until_let_go(mode, kept_by):
    """A pool filled by one call and used by the next is the next call's memory too."""
    with Practice(TOKENED) as box:
        box.expect_measured_calls(3)
        kept = box.call("keep", 48, measure_memory=kept_by == "a measured call")
        holding = box.call("nothing", 1, measure_memory=True)
        box.call("let_go", 1)
        free = box.call("nothing", 1, measure_memory=True)
    assert kept.ok, kept.error
    holding, free = peak(holding, mode), peak(free, mode)
    assert holding > 46 * MiB, holding
    assert free < 8 * MiB, free


def test_without_the_hint_the_first_measured_call_starts_a_measuring_child(mode):
    with Practice(TOKENED) as box:
        first = box.call("token", 1)  # an ordinary child: no baseline was read in it
        big = box.call("grow", 64, measure_memory=True)
        second = box.call("token", 1)
        again = box.call("nothing", 1, measure_memory=True)
        third = box.call("token", 1)
    assert first.value != second.value == third.value  # restarted once, for the first measured call
    assert 60 * MiB < peak(big, mode) < 80 * MiB and peak(again, mode) < 8 * MiB


def test_each_measured_call_has_a_cgroup_of_its_own_and_all_are_removed():
    from backprop_traps.grader.sandbox import cgroup
    if not cgroup.available()[0]:
        pytest.skip("no cgroup here")
    box = Sandbox(TOKENED, FAST)
    box.expect_measured_calls(3)
    for _ in range(3):
        assert box.call("nothing", 1, measure_memory=True).ok
    group = box._meter.group
    calls, folders = list(group.calls), group._folders()
    assert [c.name for c in calls] == ["call-1", "call-2", "call-3"] and all(c.is_dir() for c in calls)
    box.close()
    assert not any(os.path.exists(f) for f in folders), folders


def test_the_measured_call_counts_questions_announce_are_what_their_solutions_make(monkeypatch):
    """The hint each question gives (``Question.expected_measured_calls``) matches what grading
    its solution does, and the solution gets full marks with every measured call in one child."""
    from backprop_traps.grader.checks import load_question
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.loading.questions import solution_notebooks
    real_call, measured = Sandbox.call, []

    def counting(self, fn, *args, measure_memory=False, **how):
        measured.append(measure_memory)
        return real_call(self, fn, *args, measure_memory=measure_memory, **how)

    monkeypatch.setattr(Sandbox, "call", counting)
    announced = {qid: load_question(qid) for qid in solution_notebooks()}
    announced = {qid: q for qid, q in announced.items() if q.memory_paths}
    assert announced, "no question measures memory"
    for qid, question in announced.items():
        measured.clear()
        result = grade_path(solution_notebooks()[qid], practice=True)  # no cgroup: the practice meter
        assert result.score == result.max_score, (qid, [t.feedback for t in result.tests if not t.passed])
        assert sum(measured) == question.expected_measured_calls, (qid, sum(measured))
