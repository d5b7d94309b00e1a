"""Issue 43, class 3: nothing sized by a learner's value runs outside the sandbox's caps.

When a check of ``conv1d_forward`` fails, the grader replays the reference's ``conv1d_forward``
on the learner's ``conv1d_output_length`` (grader/engine/upstream.py), in the grader's own
process: one returned integer took it to 1.5 GB. Now a learner's answer is held to the form of
the reference's answer before the grader computes with it (grader/engine/learner_values.py):
an integer within the sizes of the call's inputs. Each hostile length below gets a sentence that
names the upstream function, and the grading process's peak memory stays within an honest
grading's (measured from /proc in a fresh process, ``redteam_kit.grade_in_subprocess``). The
replay's and the shrinker's own time is charged to the submission's budget (search_budget.py).
"""
from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.engine.learner_values import NotAdmitted, admit
from backprop_traps.grader.engine.search_budget import SearchBudget
from redteam_kit import build, grade_in_subprocess

LENGTHS = {"huge": "2 ** 24", "negative": "-7", "not an integer": "3.5",
           "numpy int64 max": "np.iinfo(np.int64).max", "text": "'20'"}


@pytest.mark.parametrize("length", list(LENGTHS.values()), ids=list(LENGTHS))
def test_an_upstream_size_never_sizes_the_graders_work(tmp_path, length):
    out = grade_in_subprocess(build("upstream_output_length", tmp_path, length=length), total=30.0, timeout=180)
    assert not out["hung"] and out["result"]["error"] is None
    forward = [t for t in out["result"]["tests"] if "conv1d_forward" in t["feedback"] and not t["passed"]]
    assert forward, out["result"]["tests"]
    said = " ".join(t["feedback"] for t in forward)
    assert "conv1d_output_length" in said and "Traceback" not in said, said
    assert out["grew"] < 200 * 2**20, f"the grader grew {out['grew'] / 2**20:.0f} MB"


CALL = ((20, 3, 1, 1), (np.zeros((2, 3, 20)), np.zeros((4, 3, 3)), np.zeros(4), 1, 1))


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(), st.floats(allow_nan=True), st.text(max_size=4), st.booleans(), st.none(),
                 st.lists(st.integers(), max_size=3), st.sampled_from([np.int64(2**63 - 1), np.uint64(2**64 - 1),
                                                                       np.float64(1e300), np.int32(-5)])))
def test_an_admitted_integer_is_an_int_within_the_calls_sizes(value):
    try:
        got = admit(value, 20, CALL)
    except NotAdmitted as why:
        assert str(why).startswith("it returned")
        return
    assert type(got) is int and abs(got) <= 4 * 20


def test_arrays_sequences_and_numbers_keep_the_references_form():
    want = (np.zeros((2, 3)), 1.5, True)
    ok = admit((np.ones((2, 3)), 2, False), want, ())
    assert ok[1] == 2.0 and ok[2] is False
    for bad in [(np.ones((3, 2)), 1.0, True), (np.ones((2, 3)), "x", True), (np.ones((2, 3)), 1.0),
                (np.ones((2, 3)), 1.0, 1)]:
        with pytest.raises(NotAdmitted):
            admit(bad, want, ())


class _Box:
    def __init__(self):
        from backprop_traps.grader.sandbox.limits import Limits
        self.spent, self.limits = 0.0, Limits(total_seconds=100.0)

    def charge(self, seconds):
        self.spent += seconds


def test_a_searchs_own_work_counts_against_the_submissions_budget():
    box = _Box()
    with SearchBudget(box) as budget:
        assert budget.allowance == pytest.approx(3.0)
        end = time.thread_time() + 0.05
        while time.thread_time() < end:  # the grader's own reference work
            pass
        box.spent += 1.0                 # a call in the sandbox
        assert 1.05 <= budget.used() and not budget.over()
    assert box.spent >= 1.05             # the grader's part is charged too
