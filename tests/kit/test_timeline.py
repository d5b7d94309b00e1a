"""The grading profile (issue 47, item 1: grader/timeline.py): off by default, and when
asked for, one row per boundary with wall and CPU seconds, without touching `--json`'s output."""
import json
import os
import subprocess
import sys

from conftest import solution_source

GRADE = [sys.executable, "-c", "import sys; from backprop_traps.grader.cli import main; sys.argv[0] = 'grade'; main()"]


def graded(tmp_path, profile: str | None):
    path = tmp_path / "answer.py"
    path.write_text("# question: routing_trap\n" + solution_source("routing_trap"))
    env = {k: v for k, v in os.environ.items() if k != "BACKPROP_TRAPS_PROFILE"}
    if profile is not None:
        env["BACKPROP_TRAPS_PROFILE"] = profile
    return subprocess.run(GRADE + ["--json", str(path)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)


def test_the_profile_lists_every_boundary_with_cpu_seconds(tmp_path):
    log = tmp_path / "profile.jsonl"
    done = graded(tmp_path, str(log))
    doc = json.loads(done.stdout)  # --json still prints exactly its one document
    assert doc["score"] == doc["max_score"]
    profile = json.loads(log.read_text())
    steps = [row["step"] for row in profile["steps"]]
    for wanted in ("interpreter, click, the CLI", "import the engine", "load the question's checks",
                   "child handshake (waited for its boot)", "load the learner's code", "close the sandbox",
                   "the report"):
        assert wanted in steps
    assert sum(s.startswith("check: ") for s in steps) == len(doc["tests"])
    assert all(row["wall"] >= 0 and row["grader_cpu"] >= 0 and row["sandbox_cpu"] >= 0 for row in profile["steps"])
    total = profile["total"]
    assert total["grader_cpu"] > 0 and total["sandbox_cpu_seen"] > 0 and len(total["load_average"]) == 3
    assert {span["span"] for span in profile["parallel"]} >= {"child: worker imports (numpy)"}


def test_the_profile_on_a_terminal_goes_to_stderr_and_off_means_nothing(tmp_path):
    shown = graded(tmp_path, "1")
    json.loads(shown.stdout)
    assert "child handshake" in shown.stderr and "total" in shown.stderr
    quiet = graded(tmp_path, None)
    json.loads(quiet.stdout)
    assert "child handshake" not in quiet.stderr
