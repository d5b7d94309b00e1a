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


@pytest.mark.parametrize("code, status", [(0, 0), (2, 2), (None, 0), ("Error: a sentence", 1)])
def test_an_exit_the_cli_asked_for_skips_only_the_teardown(monkeypatch, code, status):
    ended = []
    monkeypatch.setattr(entry.os, "_exit", ended.append)
    monkeypatch.setattr(entry, "_exit_status", [])
    monkeypatch.setattr(entry, "_start_early", lambda argv: None)
    monkeypatch.setattr("backprop_traps.grader.cli.main", lambda: sys.exit(code))
    monkeypatch.setattr(entry.atexit, "register", lambda hook: None)
    with pytest.raises(SystemExit):
        entry.main()
    entry._end_now()
    assert ended == [status]


def test_an_uncaught_exception_ends_the_usual_way(monkeypatch):
    ended = []
    monkeypatch.setattr(entry.os, "_exit", ended.append)
    monkeypatch.setattr(entry, "_exit_status", [])
    entry._end_now()
    assert ended == []


def test_every_other_exit_hook_still_runs_and_the_status_holds(tmp_path):
    """Hooks registered after ``main`` began (the CLI's: the profile, the warm sandbox's close)
    run before the process ends, and the status and the whole output come through."""
    shutil.copy(solution_notebooks()["routing_trap"], tmp_path / "01_routing_trap.ipynb")
    script = ("import atexit, sys; from backprop_traps.grader import entry, cli; real = cli.main\n"
              "def wrapped():\n"
              "    atexit.register(lambda: open('hook-ran', 'w').close())\n"
              "    real()\n"
              "cli.main = wrapped; sys.argv = ['grade'] + sys.argv[1:]; entry.main()\n")
    done = subprocess.run([sys.executable, "-c", script, "01_routing_trap.ipynb", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["score"] == json.loads(done.stdout)["max_score"]
    assert (tmp_path / "hook-ran").exists()
    missing = subprocess.run([sys.executable, "-c", script, "missing.ipynb"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and "missing.ipynb" in missing.stderr
