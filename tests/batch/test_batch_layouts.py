"""The parts of `grade batch` that need no grading: layouts, result names and resume, seeds
and the secret, the gradebook."""
import os
import subprocess
import sys

import pytest

from backprop_traps.grader.batch.layouts import LayoutError, find_jobs, question_in_name, split_flat_name
from backprop_traps.grader.batch.store import BROKE_WORKER, GRADED, ResultStore, result_name
from backprop_traps.grader.batch.variants import student_seed

QUESTIONS = ["routing_trap", "per_step_update_trap", "vram_trap", "softmax_ce"]


def touch(root, *paths):
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# question: routing_trap\n")


def found(source, **kw):
    return [(j.student, j.rel, j.question) for j in find_jobs(source, QUESTIONS, **kw)]


def test_student_folders_any_depth_and_litter_skipped(tmp_path):
    touch(tmp_path, "alice/routing_trap.py", "alice/extra/01_softmax_ce.ipynb", "bob smith/answer.ipynb",
          "bob smith/.ipynb_checkpoints/answer-checkpoint.ipynb", "bob smith/__pycache__/x.py",
          "carol/notes.txt", "carol/._answer.py", ".hidden student/answer.py")
    assert found(tmp_path) == [
        (".hidden student", ".hidden student/answer.py", None),
        ("alice", "alice/extra/01_softmax_ce.ipynb", "softmax_ce"),
        ("alice", "alice/routing_trap.py", "routing_trap"),
        ("bob smith", "bob smith/answer.ipynb", None),
    ]


def test_nbgrader_course_root(tmp_path):
    touch(tmp_path, "submitted/alice/ps1/01_routing_trap.ipynb", "submitted/bob/ps1/04_softmax_ce.ipynb",
          "source/ps1/01_routing_trap.ipynb", "autograded/alice/ps1/01_routing_trap.ipynb")
    expected = [("alice", "alice/ps1/01_routing_trap.ipynb", "routing_trap"),
                ("bob", "bob/ps1/04_softmax_ce.ipynb", "softmax_ce")]
    assert found(tmp_path) == expected
    assert found(tmp_path / "submitted") == expected


def test_flat_names_match_the_longest_known_question():
    assert split_flat_name("alice_routing_trap", QUESTIONS) == ("alice", "routing_trap")
    assert split_flat_name("mary_jane_per_step_update_trap", QUESTIONS) == ("mary_jane", "per_step_update_trap")
    assert split_flat_name("bob_softmax_ce", QUESTIONS) == ("bob", "softmax_ce")
    assert split_flat_name("routing_trap", QUESTIONS) == ("routing_trap", None)  # no student: the file says
    assert split_flat_name("carol_final", QUESTIONS) == ("carol_final", None)
    assert question_in_name("03_vram_trap", QUESTIONS) == "vram_trap"
    assert question_in_name("answer", QUESTIONS) is None


def test_flat_folder_glob_and_single_file(tmp_path):
    touch(tmp_path, "subs/alice_routing_trap.ipynb", "subs/mary_jane_per_step_update_trap.py",
          "subs/zoë ü_softmax_ce.py")
    assert found(tmp_path / "subs") == [
        ("alice", "alice_routing_trap.ipynb", "routing_trap"),
        ("mary_jane", "mary_jane_per_step_update_trap.py", "per_step_update_trap"),
        ("zoë ü", "zoë ü_softmax_ce.py", "softmax_ce"),
    ]
    assert [s for s, _, _ in found(f"{tmp_path}/subs/*.py")] == ["mary_jane", "zoë ü"]
    touch(tmp_path, "nb/alice/ps1/a.ipynb", "nb/bob/ps1/b.ipynb")
    assert [s for s, _, _ in found(f"{tmp_path}/nb/*/ps1/*.ipynb")] == ["alice", "bob"]
    assert found(tmp_path / "subs" / "alice_routing_trap.ipynb") == [
        ("alice", "alice_routing_trap.ipynb", "routing_trap")]
    with pytest.raises(LayoutError):
        find_jobs(tmp_path / "nothing-here", QUESTIONS)


def test_links_are_refused_and_the_output_folder_is_not_read(tmp_path):
    touch(tmp_path, "class/alice/answer.py", "class/out/results/x.py")
    os.symlink("/etc/hostname", tmp_path / "class" / "alice" / "stolen.py")
    jobs = find_jobs(tmp_path / "class", QUESTIONS, exclude=tmp_path / "class" / "out")
    assert [(j.rel, bool(j.error)) for j in jobs] == [("alice/answer.py", False), ("alice/stolen.py", True)]
    assert "symbolic link" in jobs[1].error


@pytest.mark.parametrize("rel", ["../../etc/passwd", "a/../../b.py", "..", ".", "/abs/x.py", "ok/x.py",
                                 "é/ü ñ.ipynb", "x" * 300 + ".py", "nul\0byte.py", "bad\udcffbytes.py"])
def test_result_names_stay_inside_the_folder(tmp_path, rel):
    from backprop_traps.grader.batch.layouts import Job
    job = Job(student="s", path=tmp_path / "x.py", rel=rel)
    name = result_name(job)
    assert "/" not in name and "\0" not in name and not name.startswith(".") and len(name) < 100
    store = ResultStore(tmp_path / "out")
    written = store.write(job, {"score": 1.0}, {"status": GRADED, "seed": 1, "sha256": None})
    assert written.parent == tmp_path / "out" / "results"
    assert store.load(job)[0] == {"score": 1.0}


def test_similar_names_get_different_results():
    from backprop_traps.grader.batch.layouts import Job
    names = {result_name(Job("s", None, rel)) for rel in ("a b/x.py", "a_b/x.py", "a/b/x.py", "a__b/x.py")}
    assert len(names) == 4


def test_resume_skips_only_finished_unchanged_results(tmp_path):
    from backprop_traps.grader.batch.layouts import Job
    store = ResultStore(tmp_path)
    job = Job("alice", tmp_path / "a.py", "alice/a.py")
    assert not store.done(job, 7, "abc")
    store.write(job, {"score": 1.0}, {"status": GRADED, "seed": 7, "sha256": "abc"})
    assert store.done(job, 7, "abc")
    assert not store.done(job, 8, "abc")  # another secret: another seed
    assert not store.done(job, 7, "def")  # the file changed since
    store.write(job, {"score": 0.0}, {"status": BROKE_WORKER, "seed": 7, "sha256": "abc"})
    assert not store.done(job, 7, "abc")  # grading broke down last time: try again
    (tmp_path / "results" / ".stale.json.1.2.tmp").write_text("{")
    ResultStore(tmp_path)
    assert not list((tmp_path / "results").glob(".*.tmp"))


def test_seeds_differ_per_student_and_need_the_secret():
    a, b = student_seed("s3cret", "alice", 1234), student_seed("s3cret", "bob", 1234)
    assert a != b and a == student_seed("s3cret", "alice", 1234)
    assert a != student_seed("other", "alice", 1234)
    assert student_seed(None, "alice", 1234) == student_seed("", "bob", 1234) == 1234
    assert student_seed("s3cret", "zoe\u0308", 0) == student_seed("s3cret", "zo\u00eb", 0)  # NFC
    assert 0 <= a < 2 ** 48


def test_the_secret_is_blanked_in_proc(tmp_path):
    """What other processes (and learner code) can read of the grader: /proc/<pid>/cmdline
    and /proc/<pid>/environ no longer show the secret; Python's own copies still do."""
    script = ("import os, sys\nfrom backprop_traps.grader.batch.variants import hide_secret_from_proc\n"
              "hide_secret_from_proc('hunter2-course')\n"
              "shown = open('/proc/self/cmdline', 'rb').read() + open('/proc/self/environ', 'rb').read()\n"
              "assert b'hunter2-course' not in shown, shown\n"
              "assert os.environ['BACKPROP_TRAPS_SECRET'] == 'hunter2-course' and 'hunter2-course' in sys.argv\n")
    path = tmp_path / "probe.py"
    path.write_text(script)
    env = {**os.environ, "BACKPROP_TRAPS_SECRET": "hunter2-course"}
    run = subprocess.run([sys.executable, str(path), "--secret", "hunter2-course", "--secret=hunter2-course"],
                         env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_gradebook_rows_best_scores_and_hostile_names():
    from backprop_traps.grader.batch.gradebook import Entry, gradebook_csv, summary_text
    from backprop_traps.grader.batch.layouts import Job

    def entry(student, question, score, error=None, trap=None):
        tests = [{"name": "t", "points": score, "max_points": 12.0, "passed": trap is None, "trap": trap,
                  "feedback": ""}]
        return Entry(Job(student, None, f"{student}/{question}.py"),
                     {"submission": "x", "question": question, "score": score, "max_score": 12.0,
                      "error": error, "tests": [] if error else tests})
    entries = [entry("=cmd|' /C calc'!A0", "routing_trap", 3.0, trap="lost-overlap"),
               entry("amy", "routing_trap", 5.0, trap="lost-overlap"), entry("amy", "routing_trap", 12.0),
               entry("amy", "softmax_ce", 11.0), entry("ben\x1b[2J", None, 0.0, error="bad file")]
    rows = gradebook_csv(entries, QUESTIONS).splitlines()
    assert rows[0] == "student,routing_trap,softmax_ce,total,could_not_grade"
    assert rows[1].startswith("'=cmd|") and rows[1].endswith(",3,,3,0")
    assert rows[2] == "amy,12,11,23,0"  # the best of two routing_trap files
    assert rows[3] == "ben?[2J,,,0,1"  # no control character reaches a spreadsheet either
    text = summary_text(entries, QUESTIONS)
    assert "2 students  routing_trap  lost-overlap" in text and "\x1b" not in text
