"""Hostile answers are contained: the grader stays up, scores honestly, leaves nothing behind."""
import json
from pathlib import Path

import pytest

from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.sandbox.limits import Limits
from conftest import ANSWERS, solution_source
from test_sandbox import sandbox_processes

QUICK = Limits(call_seconds=3.0, total_seconds=20.0)

# name: (build on the solution?, what the feedback must say, the most the answer may score)
CASES = {
    "loop_at_import": (False, "loading your code did not finish", 0),
    "loop_in_function": (True, "did not finish within", 8),
    "sys_exit": (True, "raised SystemExit", 8),  # a broken forward costs only its own checks
    "os_exit": (True, "crashed the Python process", 8),
    "segfault": (True, "killed by SIGSEGV", 10),
    "stdout_flood": (True, None, 12),
    "monkeypatch_numpy": (True, "does not match", 7),
    "fake_json": (True, "does not match", 8),
    "evil_reduce": (True, None, 12),
    "sleeping_children": (True, None, 12),
    "memory_8gb": (True, "MemoryError", 8),
    "writes_inputs": (True, "wrote into its input", 11),
    "reads_solution": (False, None, 0),  # finds nothing (or runs out of time looking)
}


def hostile_file(tmp_path, name, on_solution):
    body = (ANSWERS / "hostile" / f"{name}.py").read_text()
    if on_solution:
        body = solution_source("routing_trap") + "\n" + body
    path = tmp_path / f"{name}.py"
    path.write_text("# question: routing_trap\n" + body)
    return path


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_answer_is_contained(tmp_path, name):
    on_solution, says, most = CASES[name]
    result = grade_path(hostile_file(tmp_path, name, on_solution), limits=QUICK)
    assert result.error is None, result.error
    assert len(result.tests) == 8
    assert result.score <= most, [(t.name, t.feedback) for t in result.tests]
    if says:
        assert any(says in t.feedback for t in result.tests), [t.feedback for t in result.tests]
    assert not any("Traceback" in t.feedback for t in result.tests)
    assert sandbox_processes() == []
    assert not Path("/tmp/backprop-traps-pwned").exists()


def test_full_marks_survive_the_noise(tmp_path):
    """Flooding stdout or leaving processes behind does not cost a correct answer its marks."""
    for name in ("stdout_flood", "sleeping_children", "evil_reduce"):
        result = grade_path(hostile_file(tmp_path, name, True), limits=QUICK)
        assert result.score == result.max_score, name


def test_fake_json_does_not_reach_stdout(tmp_path):
    from click.testing import CliRunner
    from backprop_traps.grader.cli import main
    path = hostile_file(tmp_path, "fake_json", True)
    out = CliRunner().invoke(main, [str(path), "--json"])
    doc = json.loads(out.stdout)  # exactly one JSON document
    assert doc["submission"] == str(path) and doc["score"] < doc["max_score"]
