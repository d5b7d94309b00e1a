"""``CheckContext.meanwhile``: the grader's own reference work runs on another core while the
learner's child computes a measured call, and never beside a call measured in this process."""
import threading

import numpy as np

from backprop_traps.grader.authoring.in_process import InProcessCaller
from backprop_traps.grader.engine.call_memo import CallMemo
from backprop_traps.grader.engine.context import CheckContext
from backprop_traps.grader.engine.question import Question


class _Child:
    """A sandbox as the context sees it: a child apart from this process."""


def _context(sandbox):
    return CheckContext(Question("meanwhile", "meanwhile"), sandbox, ref=None, seed=1, check_name="c")


def test_apart_from_the_child_it_runs_on_another_thread_with_the_checks_errstate():
    seen = {}

    def work(x):
        seen["thread"] = threading.current_thread() is not threading.main_thread()
        seen["errstate"] = np.geterr()["divide"]
        return x * 2

    with np.errstate(divide="raise"):
        result = _context(CallMemo(_Child())).meanwhile(work, 21)
    assert result() == 42 and result() == 42
    assert seen == {"thread": True, "errstate": "raise"}


def test_in_this_process_it_runs_first_so_no_measured_call_counts_it():
    order = []
    ctx = _context(CallMemo(InProcessCaller({"f": lambda: order.append("call")})))
    result = ctx.meanwhile(lambda: order.append("reference") or "done")
    assert order == ["reference"]
    ctx.call("f")
    assert order == ["reference", "call"] and result() == "done"


def test_a_raising_reference_raises_where_its_result_is_taken():
    result = _context(CallMemo(_Child())).meanwhile(lambda: 1 / 0)
    try:
        result()
    except ZeroDivisionError:
        return
    raise AssertionError("the reference's error was lost")
