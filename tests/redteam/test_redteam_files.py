"""Issue 35, class 3: files in the learner's folder that would crash or hang `grade`.

The history's name as 200,000 nested lists, a FIFO, a link to /dev/zero, a sparse terabyte, a
folder; an interview answer and a submission that are FIFOs or links. Each is run as the
learner runs it, `grade` in a process of its own with a deadline: it must finish, say one
sentence, and never show a traceback. These are the grader's own reads, outside the sandbox,
so the isolation level does not change them; `grade FILE` runs in the default mode and
without bubblewrap all the same, since it grades before it reads the history.
"""
import os
import subprocess
import sys

import pytest

from backprop_traps.grader.learner.history import FILENAME
from redteam_kit import build, mode  # noqa: F401 (mode: a fixture)
from test_bounded_reads import hostile  # tests/, beside conftest.py: the same hostile files

GRADE = [sys.executable, "-c", "from backprop_traps.grader.cli import main; main()"]
HISTORY_ATTACKS = ["deep", "fifo", "zero", "sparse", "folder"]


def run(args, cwd, timeout=120, stdin=subprocess.DEVNULL):
    """`grade ARGS` in ``cwd``, in a fresh process; a hang fails the test at ``timeout``."""
    try:
        return subprocess.run(GRADE + args, cwd=cwd, stdin=stdin, capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, "NO_COLOR": "1"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"`grade {' '.join(args)}` hung on the folder's files")


@pytest.mark.parametrize("kind", HISTORY_ATTACKS)
def test_grade_and_grade_list_survive_any_history(tmp_path, mode, kind):
    mode("default")
    answer = build("honest", tmp_path, filename="answer.py")
    hostile(tmp_path, kind, FILENAME)
    graded = run([str(answer)], tmp_path)
    assert graded.returncode == 0 and "Score:" in graded.stdout, graded.stderr[-2000:]
    listed = run(["list"], tmp_path, timeout=60)
    assert listed.returncode == 0 and "routing_trap" in listed.stdout
    assert FILENAME in graded.stderr  # one sentence says what became of it
    assert "Traceback" not in graded.stderr + listed.stderr
    if kind in ("deep", "sparse"):  # a broken regular file is set aside, as the README promises
        assert (tmp_path / f"{FILENAME}.broken").exists()
    else:  # anything else is left exactly where it is
        assert os.path.lexists(tmp_path / FILENAME) and not list(tmp_path.glob("*.broken*"))


def test_a_fifo_history_does_not_hang_grade_without_bubblewrap(tmp_path, mode):
    mode("no_bwrap")
    answer = build("honest", tmp_path, filename="answer.py")
    os.mkfifo(tmp_path / FILENAME)
    graded = run([str(answer)], tmp_path)
    assert graded.returncode == 0 and "Score:" in graded.stdout and "records nothing" in graded.stderr


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_interview_answer_and_submission_files_cannot_hang_grade(tmp_path, kind):
    hostile(tmp_path, kind, "answer.txt")
    said = run(["interview", "routing_trap", "--answer", "answer.txt", "--json"], tmp_path, timeout=60)
    assert said.returncode == 2 and "answer.txt" in said.stderr and "Traceback" not in said.stderr
    hostile(tmp_path, kind, "01_routing_trap.ipynb")
    graded = run(["01_routing_trap.ipynb", "--json"], tmp_path, timeout=60)
    assert graded.returncode == 0 and "Traceback" not in graded.stderr
    assert '"error": "01_routing_trap.ipynb is' in graded.stdout
