"""Grading fidelity across questions (issue 24): each check tests only what its name says, a
function that timed out is not run again, a file for another question is told so, and
`grade --json` carries every key the README promises."""
from __future__ import annotations

import json
import re

from click.testing import CliRunner

from conftest import REPO
from backprop_traps.grader.cli import main
from backprop_traps.grader.engine.call_memo import CallMemo
from backprop_traps.grader.engine.context import low_precision
from backprop_traps.grader.sandbox.process import CallResult

import numpy as np


def test_json_objects_carry_every_key_the_readme_promises():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    promise = re.search(r"every object also carries its (.+?)\s\(", readme, re.S)
    keys = re.findall(r"`(\w+)`", promise.group(1))
    assert keys == ["seed", "isolation"], keys
    out = CliRunner().invoke(main, [str(REPO / "solutions" / "04_softmax_ce.ipynb"), "--json"])
    doc = json.loads(out.output)
    assert all(key in doc for key in keys) and doc["isolation"], doc.keys()


class _Slow:
    """A sandbox whose `loop` never finishes and whose `fine` answers."""
    def __init__(self):
        self.calls = []
        self.output = "printed"

    def call(self, fn, *args, **how):
        self.calls.append(fn)
        if fn == "loop":
            return CallResult(False, kind="timeout", error="loop() did not finish within 10 s")
        return CallResult(True, value=1.0)


def test_a_function_that_timed_out_once_is_not_called_again():
    sandbox = _Slow()
    calls = CallMemo(sandbox)
    first, second = calls.call("loop", 1), calls.call("loop", 2, echo_args=True)
    assert not first.ok and not second.ok and second.kind == "timeout"
    assert second.error.startswith("loop() did not finish within 10 s") and "not called again" in second.error
    assert calls.call("fine").ok and sandbox.calls == ["loop", "fine"]
    assert calls.output == "printed"  # the rest is the sandbox's


def test_float32_is_a_dtype_message_not_a_trap():
    expected = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    right32 = low_precision("dx", expected.astype(np.float32), "f", expected)
    assert "float32 where the contract wants float64" in right32 and "right to float32" in right32
    assert "wrong even at float32" in low_precision("dx", 2 * expected.astype(np.float32), "f", expected)
    assert low_precision("dx", expected, "f", expected) is None


def test_a_file_for_another_question_is_told_so():
    notebook = REPO / "solutions" / "04_softmax_ce.ipynb"
    out = CliRunner().invoke(main, [str(notebook), "-q", "layernorm_backward", "--json"])
    doc = json.loads(out.output)
    assert out.exit_code == 0 and doc["score"] == 0 and doc["tests"] == []
    assert "looks like an answer to 'softmax_ce', not 'layernorm_backward'" in doc["error"]
    assert "--question softmax_ce" in doc["error"]


def test_a_looping_function_costs_one_time_limit_not_one_per_check(tmp_path):
    """Through the real sandbox: the first check that calls the looping backward waits out the
    limit; every later check that calls it fails at once, with the same reason."""
    from conftest import ANSWERS, solution_source
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.sandbox.limits import Limits
    body = solution_source("routing_trap") + "\n" + (ANSWERS / "hostile" / "loop_in_function.py").read_text()
    path = tmp_path / "loops.py"
    path.write_text("# question: routing_trap\n" + body)
    result = grade_path(path, limits=Limits(call_seconds=2.0, total_seconds=60.0))
    timed_out = [t for t in result.tests if "did not finish within" in t.feedback]
    assert len(timed_out) >= 3, [(t.name, t.feedback) for t in result.tests]
    first, *later = timed_out
    assert "not called again" not in first.feedback
    assert all("not called again in this grading" in t.feedback for t in later)


def test_the_report_names_the_trap_and_its_symptom_and_the_hints_give_the_fix(answer_file):
    """Issue 22: what is wrong in the report, the fix only behind --hint, following the trap;
    a sentence repeated across checks is printed once."""
    from backprop_traps.grader.checks import load_question
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.learner.report import render
    trap = load_question("routing_trap").trap("lost-overlap")
    result = grade_path(answer_file("routing_trap", "lost_overlap"))
    named = [t for t in result.tests if t.trap == "lost-overlap"]
    assert len(named) >= 2
    for t in named:
        assert trap.what_is_wrong in t.feedback and "np.add.at" not in t.feedback, t.feedback
        assert any("np.add.at" in hint for hint in t.hints), t.hints
    report = " ".join(render(result, color=False).split())  # as read, across wrapped lines
    assert report.count(trap.what_is_wrong) == 1 and "(The rest as above.)" in report
