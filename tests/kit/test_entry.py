"""``grade FILE`` starts its sandbox before click is imported (grader/entry.py), and only when
the command line alone says what the sandbox is launched with; the grading then takes that
sandbox instead of starting a second one."""
import json
import shutil
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from backprop_traps.grader import entry
from backprop_traps.grader.loading.questions import solution_notebooks

GRADE = [sys.executable, "-c", "from backprop_traps.grader.entry import main; main()"]


@pytest.fixture
def answer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "answer.py").write_text("# question: routing_trap\n")
    return "answer.py"


@pytest.mark.parametrize("argv", [["answer.py"], ["answer.py", "--json"], ["--hint", "answer.py"],
                                  ["answer.py", "--seed", "7", "-q", "routing_trap"]])
def test_a_plain_grading_starts_early(answer, argv):
    assert entry._plain_grading(argv) == answer


@pytest.mark.parametrize("argv", [[], ["list"], ["start", "routing_trap"], ["answer.py", "--memory-mb", "512"],
                                  ["answer.py", "--replay"], ["answer.py", "--questions-dir", "q"],
                                  ["answer.py", "--seed"], ["--help"], ["missing.py"], ["answer"],
                                  ["answer.py", "--draw", "0" * 32], ["interview", "answer.py"]])
def test_anything_else_starts_nothing_early(answer, argv):
    assert entry._plain_grading(argv) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=6))
def test_any_command_line_is_read_without_raising(argv):
    found = entry._plain_grading(argv)
    assert found is None or found in argv


def _launches(folder, *args):
    profile = folder / "profile.jsonl"
    env = {**__import__("os").environ, "BACKPROP_TRAPS_PROFILE": str(profile)}
    done = subprocess.run(GRADE + list(args), cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    steps = [s["step"] for line in profile.read_text().splitlines() for s in json.loads(line)["steps"]]
    return [s for s in steps if s.startswith("launch the sandbox")], steps, done


@pytest.mark.parametrize("extra", [[], ["--memory-mb", "700"]])
def test_the_grading_takes_the_sandbox_started_early(tmp_path, extra):
    shutil.copy(solution_notebooks()["routing_trap"], tmp_path / "01_routing_trap.ipynb")
    launches, steps, done = _launches(tmp_path, "01_routing_trap.ipynb", "--json", *extra)
    assert json.loads(done.stdout)["score"] == json.loads(done.stdout)["max_score"]
    assert len(launches) == 1, steps  # one sandbox: started early, or by the CLI, never both
    first = steps.index(launches[0]) < steps.index("interpreter, click, the CLI")
    assert first == (not extra)  # a limit on the command line: the CLI starts it, as before
