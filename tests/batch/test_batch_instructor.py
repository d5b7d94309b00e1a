"""An instructor's day with `grade batch`: regrading one student in place, a relative
--questions-dir beside the shipped questions, a secret file that is empty, a dry run,
progress off a terminal, what needs a look, and what a batch refuses to read (FIFOs, links,
sparse giants, vanished files, forged question ids)."""
import csv
import json
import os
import shutil

import nbformat
import pytest
from click.testing import CliRunner

from conftest import solution_source
from backprop_traps.grader.batch.layouts import find_jobs
from backprop_traps.grader.batch.plan import Batch
from backprop_traps.grader.batch.store import ResultStore
from backprop_traps.grader.batch.variants import student_seed
from backprop_traps.grader.commands.batch import batch
from backprop_traps.grader.loading.questions import solution_notebooks

SECRET = "instructor-day-secret"
LIMIT_ARGS = ["--call-timeout", "5", "--total-timeout", "20"]


def run_cli(*args, **kw):
    return CliRunner().invoke(batch, [str(a) for a in args], catch_exceptions=False, **kw)


def rows(out):
    with open(out / "gradebook.csv", encoding="utf-8") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def sidecars(out):
    return [json.loads(p.read_text()) for p in (out / "results").glob("*.run.json")]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """nbgrader's layout, three students, graded once: (course root, output, secret file)."""
    tmp = tmp_path_factory.mktemp("day")
    root = tmp / "course"
    for student in ("s001", "s002", "s003"):
        write(root / "submitted" / student / "ps1" / "routing_trap.py",
              "# question: routing_trap\n" + solution_source("routing_trap"))
    (root / "source" / "ps1").mkdir(parents=True)  # what makes it an nbgrader course root
    write(root / "submitted" / "s003" / "ps1" / "timestamp.txt", "2026-03-02 09:00:00.000000 UTC")
    write(root / "submitted" / "s001" / "ps1" / "timestamp.txt", "2026-02-27 09:00:00.000000 UTC")
    secret = write(tmp / "secret.txt", SECRET)
    out = tmp / "out"
    result = run_cli(root, "-o", out, "-j", 2, "--secret-file", secret, *LIMIT_ARGS)
    assert result.exit_code == 0, result.output
    return root, out, secret


def test_regrading_one_students_folder_keeps_the_class_and_their_seed(course, tmp_path):
    """Defect 25.1: `grade batch submitted/s003 --force` read s003's assignment folders as
    students and rebuilt the gradebook from s003's rows alone."""
    root, clean, secret = course
    out = tmp_path / "out"
    shutil.copytree(clean, out)
    again = run_cli(root / "submitted" / "s003", "-o", out, "--force", "--secret-file", secret, *LIMIT_ARGS)
    assert again.exit_code == 0, again.output
    assert "1 submissions from 1 students: 1 to grade" in again.output
    assert list(rows(out)) == ["s001", "s002", "s003"]
    assert len(sidecars(out)) == 3
    mine = [m for m in sidecars(out) if m["student"] == "s003"]
    assert [m["seed"] for m in mine] == [student_seed(SECRET, "s003", 1234, assignment="ps1", question="routing_trap")]


def test_a_folder_named_submitted_outside_a_course_is_read_as_it_is(tmp_path):
    write(tmp_path / "submitted" / "class2026" / "ann" / "routing_trap.py", "x = 1")
    jobs = find_jobs(tmp_path / "submitted" / "class2026", list(solution_notebooks()))
    assert [(j.student, j.rel) for j in jobs] == [("ann", "ann/routing_trap.py")]
    (tmp_path / "source").mkdir()  # now it is an nbgrader course: class2026 is a student
    jobs = find_jobs(tmp_path / "submitted" / "class2026", list(solution_notebooks()))
    assert [(j.student, j.rel) for j in jobs] == [("class2026", "class2026/ann/routing_trap.py")]


def test_student_option_regrades_in_place(course, tmp_path):
    root, clean, secret = course
    out = tmp_path / "out"
    shutil.copytree(clean, out)
    again = run_cli(root, "-o", out, "--student", "s002", "--secret-file", secret, *LIMIT_ARGS)
    assert again.exit_code == 0, again.output
    assert "1 submissions from 1 students: 1 to grade, 0 already graded" in again.output
    assert list(rows(out)) == ["s001", "s002", "s003"] and rows(out) == rows(clean)
    unknown = run_cli(root, "-o", out, "--student", "nobody", "--secret-file", secret)
    assert unknown.exit_code == 2 and "no submissions from nobody" in unknown.output


def test_an_empty_secret_file_is_refused(course, tmp_path):
    """Defect 25.3: it used to fall back to the public seed 1234 for every student."""
    root, _, _ = course
    empty = write(tmp_path / "secret.txt", "\n  \n")
    result = run_cli(root, "-o", tmp_path / "out", "--secret-file", empty)
    assert result.exit_code == 2 and "is empty" in result.output
    assert not (tmp_path / "out").exists()
    assert run_cli("--seed-of", "s001", "--secret-file", empty).exit_code == 2


def test_relative_questions_dir_beside_the_shipped_questions(tmp_path, monkeypatch):
    """Defect 25.2: a relative --questions-dir graded nothing (grading processes run from /),
    the replay left the option out, and a class could not mix own and shipped questions."""
    own = tmp_path / "own"
    (own / "solutions").mkdir(parents=True)
    shutil.copy(solution_notebooks()["softmax_ce"], own / "solutions")
    write(tmp_path / "class" / "ann" / "softmax_ce.py", "# question: softmax_ce\n" + solution_source("softmax_ce"))
    write(tmp_path / "class" / "ann" / "answer.py", "# question: routing_trap\n" + solution_source("routing_trap"))
    monkeypatch.chdir(tmp_path)
    result = run_cli("class", "-o", "out", "--questions-dir", "own", "-j", 1, *LIMIT_ARGS)
    assert result.exit_code == 0, result.output
    assert rows(tmp_path / "out")["ann"] == {"student": "ann", "routing_trap": "12", "softmax_ce": "11",
                                             "total": "23", "could_not_grade": "0"}
    replay = next(m["replay"] for m in sidecars(tmp_path / "out") if m["file"] == "ann/softmax_ce.py")
    assert f"--questions-dir {own}" in replay and str(tmp_path / "class" / "ann" / "softmax_ce.py") in replay


def test_dry_run_lists_files_and_grades_nothing(course, tmp_path):
    root, _, _ = course
    write(root / "submitted" / "s004" / "ps1" / "notes.py", "x = 1")
    try:
        result = run_cli(root, "-o", tmp_path / "out", "--dry-run")
    finally:
        shutil.rmtree(root / "submitted" / "s004")
    assert result.exit_code == 0, result.output
    assert "s001  s001/ps1/routing_trap.py  routing_trap" in result.output
    assert "s004  s004/ps1/notes.py  (the file says)" in result.output
    assert "4 files from 4 students: 4 to grade, 0 skipped" in result.output
    assert not (tmp_path / "out").exists()


def test_progress_lines_when_not_on_a_terminal(course, tmp_path):
    root, clean, secret = course
    out = tmp_path / "out"
    shutil.copytree(clean, out)
    result = run_cli(root, "-o", out, "--force", "--secret-file", secret, *LIMIT_ARGS)
    assert "graded 3/3 (100%" in result.output


def test_what_a_batch_refuses_to_read(tmp_path):
    """Issue 23, class 6: a FIFO, a link on the path, a sparse terabyte, a vanished file and a
    forged question id each become that submission's result; the classmates are graded."""
    base = tmp_path / "class"
    write(base / "amy" / "routing_trap.py", "# question: routing_trap\n" + solution_source("routing_trap"))
    os.mkfifo(base / "amy" / "blocks.py")
    (base / "ben").symlink_to(base / "amy")  # a student folder that is a link
    giant = write(base / "cat" / "giant.py", "# question: routing_trap\n")
    os.truncate(giant, 1 << 40)
    nb = nbformat.v4.new_notebook(metadata={"backprop_traps": {"question": "=HYPERLINK(\"x\")"}})
    nbformat.write(nb, str(write(base / "dan" / "forged.ipynb", "")))
    gone = write(base / "eve" / "routing_trap.py", "# question: routing_trap\n")
    try:  # a character device (/dev/null's numbers), where this user may make one
        import stat
        os.mknod(base / "cat" / "device.py", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except OSError:
        pass
    jobs = find_jobs(str(base) + "/*/*", list(solution_notebooks()))
    gone.unlink()
    store = ResultStore(tmp_path / "out")
    todo = Batch(jobs, store).pending()
    errors = {j.rel: store.load(j)[0]["error"] for j in jobs if store.load(j)[0]}
    assert "is a FIFO, not a regular file" in errors["amy/blocks.py"]
    assert "lies under a symbolic link (ben)" in errors["ben/routing_trap.py"]
    assert "over the 16 MB" in errors["cat/giant.py"]
    assert "could not be read" in errors["eve/routing_trap.py"]
    if (base / "cat" / "device.py").exists():
        assert "is a device, not a regular file" in errors.pop("cat/device.py")
        (base / "cat" / "device.py").unlink()
    assert {i.job.rel for i in todo} == {"amy/routing_trap.py", "dan/forged.ipynb"}
    out = tmp_path / "graded"
    result = run_cli(str(base) + "/*/*", "-o", out, *LIMIT_ARGS)
    assert result.exit_code == 0, result.output
    book = rows(out)
    assert book["amy"]["routing_trap"] == "12" and set(book["amy"]) == {
        "student", "routing_trap", "total", "could_not_grade"}  # no column from dan's metadata
    assert book["dan"]["could_not_grade"] == "1"
    summary = (out / "summary.txt").read_text()
    assert "Needs a look (5:" in summary and "HYPERLINK" not in (out / "gradebook.csv").read_text()


def test_needs_a_look_names_each_kind_of_breakdown():
    from backprop_traps.grader.batch.gradebook import Entry, summary_text
    from backprop_traps.grader.batch.layouts import Job

    def entry(student, error=None, feedback="", warnings=(), grader_error=False):
        result = {"question": "routing_trap", "score": 0.0, "max_score": 12.0, "error": error,
                  "tests": [{"name": "t", "points": 0, "max_points": 12, "passed": False, "trap": None,
                             "feedback": feedback}], "warnings": list(warnings)}
        if grader_error:
            result["grader_error"] = True
        return Entry(Job(student, None, f"{student}/a.py"), result)
    entries = [entry("a", feedback="maxpool2d_forward() did not finish within 5 s (an endless loop)"),
               entry("b", feedback="maxpool2d_forward() raised MemoryError"),
               entry("c", warnings=["cell 2 is not valid Python, so none of it ran: SyntaxError"]),
               entry("d", warnings=["cell 3 raised ValueError: no; the lines after it in this cell did not run"]),
               entry("e", grader_error=True, feedback="internal grader error (KeyError)"),
               entry("f", feedback="dx is wrong at 3 entries")]
    text = summary_text(entries, ["routing_trap"])
    look = text.split("Needs a look (5:")[1]
    for student, why in [("a", "timed out"), ("b", "out of memory"), ("c", "not valid Python"),
                         ("d", "raised while loading"), ("e", "grader error")]:
        assert f"  {student}  {student}/a.py: {why}: " in look
    assert "f/a.py" not in look


def test_export_follows_the_contract_and_flags_late_work(course, tmp_path):
    from backprop_traps.grader.commands.export import export
    _, out, _ = course
    result = CliRunner().invoke(export, [str(out), "--due", "2026-03-01T00:00"])
    assert result.exit_code == 0, result.output
    table = list(csv.reader(result.output.splitlines()))  # flagged students: only with -o or on a terminal
    written = CliRunner().invoke(export, [str(out), "--due", "2026-03-01T00:00", "-o", str(tmp_path / "g.csv")])
    assert "s003: late (routing_trap)" in written.stderr
    assert table[0] == ["student", "routing_trap", "routing_trap max", "total", "max", "percent", "late",
                        "status"]
    assert table[1] == ["s001", "12", "12", "12", "12", "100.0", "no", "graded"]  # nbgrader's timestamp.txt
    assert table[3] == ["s003", "12", "12", "12", "12", "100.0", "yes", "late"]
    assert [r[0] for r in table[1:]] == ["s001", "s002", "s003"]
    canvas = CliRunner().invoke(export, [str(out), "--format", "canvas", "-o", str(tmp_path / "c.csv")])
    assert canvas.exit_code == 0
    lines = (tmp_path / "c.csv").read_text().splitlines()
    assert lines[0] == "Student,ID,SIS User ID,SIS Login ID,Section,routing_trap,Notes"
    assert lines[1] == "    Points Possible,,,,,12," and lines[2] == "s001,,,s001,,12,"
    moodle = CliRunner().invoke(export, [str(out), "--format", "moodle"])
    assert moodle.stdout.splitlines()[:2] == ["Username,routing_trap,Total,routing_trap feedback", "s001,12,12,"]
    bad = CliRunner().invoke(export, [str(out), "--due", "next friday"])
    assert bad.exit_code == 2 and "not a date and time" in bad.output
    assert CliRunner().invoke(export, [str(tmp_path)]).exit_code == 2


def test_show_prints_a_students_stored_report_and_its_replay(course):
    from backprop_traps.grader.commands.show import show
    _, out, _ = course
    result = CliRunner().invoke(show, [str(out), "s002"])
    assert result.exit_code == 0, result.output
    seed = student_seed(SECRET, "s002", 1234, assignment="ps1", question="routing_trap")
    assert "routing_trap  ·  s002/ps1/routing_trap.py" in result.output and "Score: 12 / 12" in result.output
    # a report that may be handed back: the run's token and the instructor's replay by it, never the seed
    assert "replay token bpt1." in result.output and "replay: grade replay bpt1." in result.output
    assert str(seed) not in result.output and "--seed" not in result.output
    assert CliRunner().invoke(show, [str(out), "nobody"]).exit_code == 2


def _descendants(pid):
    """Every process below ``pid`` (by walking /proc's parent links)."""
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                parents[int(entry)] = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def test_nothing_outlives_a_killed_batch(tmp_path):
    """Defect 25.4: after a SIGKILL of the batch a grading process went on running its
    sandbox for another 16 to 21 s."""
    import signal
    import subprocess
    import sys
    import time
    from conftest import REPO
    write(tmp_path / "class" / "ann" / "routing_trap.py", "# question: routing_trap\n" + solution_source("routing_trap")
          + "\ndef maxpool2d_forward(x, kernel_size, stride):\n    while True:\n        pass\n")
    cmd = [sys.executable, "-m", "backprop_traps.grader.batch", str(tmp_path / "class"), "-o", str(tmp_path / "out"), "-j", "1",
           "--call-timeout", "20", "--total-timeout", "40"]
    proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline, below = time.monotonic() + 60, set()
    while time.monotonic() < deadline and len(below) < 3:  # the grading process, bwrap, the sandbox
        time.sleep(0.2)
        below |= _descendants(proc.pid)
    time.sleep(1.0)
    below |= _descendants(proc.pid)
    assert len(below) >= 2, "the sandbox never started"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in below):
        time.sleep(0.2)
    alive = [p for p in below if os.path.exists(f"/proc/{p}")
             and open(f"/proc/{p}/stat").read().split(")")[-1].split()[0] != "Z"]
    assert alive == [], "processes outlived the killed batch"


def test_a_memory_error_says_nothing_about_stale_globals():
    """Defect 25.5: a 3 GB allocation's MemoryError feedback added the stale-globals sentence."""
    from backprop_traps.grader.sandbox.failures import describe_failure
    error = {"type": "MemoryError", "message": "Unable to allocate 3.00 GiB", "line": 3,
             "cell": "<submission>", "stale": ["cache"]}
    text = describe_failure({"kind": "exception", "error": error}, "maxpool2d_forward()", "a\nb\nc\n", None, [])
    assert "MemoryError" in text and "changed when the grader called them" not in text
    error["type"] = "KeyError"
    text = describe_failure({"kind": "exception", "error": error}, "maxpool2d_forward()", "a\nb\nc\n", None, [])
    assert "changed when the grader called them" in text


def test_a_replay_writes_no_history_into_the_instructors_folder(course, tmp_path, monkeypatch):
    import shlex
    from backprop_traps.grader.cli import main
    _, out, _ = course
    meta = next(m for m in sidecars(out) if m["student"] == "s001")
    monkeypatch.chdir(tmp_path)  # any folder: the replay names the file by its absolute path
    result = CliRunner().invoke(main, shlex.split(meta["replay"])[1:])
    assert result.exit_code == 0, result.output
    assert f"seed {meta['seed']}" in result.output and "Score: 12 / 12" in result.output
    assert list(tmp_path.iterdir()) == []


def test_grade_new_names_the_questions_folder_in_its_next_step(tmp_path, monkeypatch):
    """Defect 25.2: `grade new`'s "next:" line left --questions-dir out."""
    from backprop_traps.grader.commands.new import new
    monkeypatch.chdir(tmp_path)
    (tmp_path / "own").mkdir()
    result = CliRunner().invoke(new, ["tanh_toy", "--questions-dir", "own"])
    assert result.exit_code == 0, result.output
    assert f"grade release tanh_toy --questions-dir {tmp_path / 'own'}" in result.output
    assert f"grade validate tanh_toy --questions-dir {tmp_path / 'own'}" in result.output


def test_the_chart_is_a_grid_with_scores_on_a_numeric_axis(tmp_path):
    """Defect 25.5: summary.png was one 2310 x 374 strip, scores drawn evenly spaced."""
    import matplotlib.image
    from backprop_traps.grader.batch.gradebook import Entry, write_chart
    from backprop_traps.grader.batch.layouts import Job
    known = list(solution_notebooks())[:7]
    entries = [Entry(Job(f"s{i}", None, f"s{i}/{q}.py"),
                     {"question": q, "score": float(score), "max_score": 12.0, "error": None,
                      "tests": [{"trap": "lost-overlap", "passed": False}] if score < 12 else []})
               for i, score in enumerate([0, 2, 10, 12]) for q in known]
    assert write_chart(tmp_path / "summary.png", entries, known)
    height, width = matplotlib.image.imread(str(tmp_path / "summary.png")).shape[:2]
    assert width <= 1400 and height >= width // 2  # 8 panels: three a row, three rows


def test_a_dask_task_never_reads_a_fifo_or_a_giant(tmp_path):
    """A Dask task carries the file's bytes: they are read under the same rules, or the task
    records that the file could not be read (a worker must never open the FIFO itself)."""
    from backprop_traps.grader.batch.grading import grade_job, make_spec
    from backprop_traps.grader.sandbox.limits import Limits
    os.mkfifo(tmp_path / "blocks.py")
    giant = tmp_path / "giant.py"
    with open(giant, "wb") as f:
        f.truncate(1 << 40)
    for path in (tmp_path / "blocks.py", giant):
        spec = make_spec(path, "routing_trap", 1234, Limits(), None, with_content=True)
        assert spec["content"] is None
        assert "could not be read" in grade_job(spec)["result"]["error"]


def test_times_as_nbgrader_writes_them():
    from datetime import datetime, timedelta, timezone
    from backprop_traps.grader.batch.layouts import parse_time
    utc = datetime(2026, 3, 1, 17, 0, tzinfo=timezone.utc)
    assert parse_time("2026-03-01 17:00:00.000000 UTC") == utc == parse_time("2026-03-01T17:00")
    assert parse_time("2026-03-01 09:00:00.000000 -0800") == utc
    assert parse_time("2026-03-01T18:00+01:00") == utc and utc - parse_time("2026-03-01") == timedelta(hours=17)
    with pytest.raises(ValueError):
        parse_time("next friday")
