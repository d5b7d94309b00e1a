"""Issue 38, item 8: an instructor loses no flag on the way to the LMS.

An empty file, a truncated notebook, a question handed nothing in for, an untouched stub and
a roster name with no file each scored a plain 0 in every export, with nothing said at export
time; summary.txt named neither the missing nor the stubs, and no per-check failure rates
existed; a load-time loop held its grading slot for the whole 30 s load budget."""
import csv
import json
import shutil

import pytest
from click.testing import CliRunner

from conftest import solution_source
from backprop_traps.grader.batch.status import read_roster
from backprop_traps.grader.batch.untouched import is_untouched_stub
from backprop_traps.grader.commands.batch import batch
from backprop_traps.grader.commands.export import export
from backprop_traps.grader.loading.questions import exercise_path

LIMITS = ["--call-timeout", "5", "--total-timeout", "20"]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def flagged_class(tmp_path_factory):
    """Six students, each a different story, graded once: (output folder, roster file)."""
    tmp = tmp_path_factory.mktemp("flags")
    src = tmp / "class"
    write(src / "ann" / "softmax_ce.py", "# question: softmax_ce\n" + solution_source("softmax_ce"))
    write(src / "ann" / "01_routing_trap.ipynb", "")  # empty file
    truncated = exercise_path("routing_trap").read_text()[:700]
    write(src / "bob" / "01_routing_trap.ipynb", truncated)  # a notebook cut off mid-JSON
    write(src / "bob" / "softmax_ce.py", "# question: softmax_ce\n" + solution_source("softmax_ce"))
    (src / "cat").mkdir(parents=True)
    shutil.copy(exercise_path("softmax_ce"), src / "cat" / "04_softmax_ce.ipynb")  # untouched stub
    write(src / "cat" / "routing_trap.py", "# question: routing_trap\n" + solution_source("routing_trap"))
    write(src / "dan" / "softmax_ce.py", "# question: softmax_ce\nimport numpy as np\nwhile True:\n    pass\n")
    write(src / "eve" / "routing_trap.py", "# question: routing_trap\n" + solution_source("routing_trap"))
    roster = write(tmp / "roster.csv", "student,name\nann,Ann\nbob,Bob\ncat,Cat\ndan,Dan\neve,Eve\nfay,Fay\n")
    out = tmp / "out"
    result = CliRunner().invoke(batch, [str(src), "-o", str(out), "-j", "2", "--roster", str(roster), *LIMITS],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out, roster


def test_every_export_says_why_a_zero_is_a_zero(flagged_class, tmp_path):
    out, roster = flagged_class
    plain = CliRunner().invoke(export, [str(out), "--roster", str(roster)])
    assert plain.exit_code == 0 and plain.output == plain.stdout  # stdout alone: the CSV, nothing else
    result = CliRunner().invoke(export, [str(out), "--roster", str(roster), "-o", str(tmp_path / "g.csv")])
    assert result.exit_code == 0, result.output
    table = {r["student"]: r for r in csv.DictReader((tmp_path / "g.csv").read_text().splitlines())}
    assert list(table) == ["ann", "bob", "cat", "dan", "eve", "fay"]
    assert table["ann"]["status"] == "routing_trap: could not grade"
    assert table["bob"]["status"] == "routing_trap: could not grade"
    assert table["cat"]["status"] == "softmax_ce: untouched stub"
    assert table["dan"]["status"].startswith("routing_trap: missing; softmax_ce: graded, needs a look (timed out")
    assert table["eve"]["status"] == "softmax_ce: missing"
    assert table["fay"]["status"] == "missing: nothing handed in" and table["fay"]["total"] == "0"
    # one line per flagged student on the terminal, the reason included
    said = result.stderr
    assert "6 of 6 students flagged" in said
    assert "ann: routing_trap could not be graded (01_routing_trap.ipynb is empty)" in said
    assert "fay: handed in nothing (on the roster)" in said


def test_canvas_and_moodle_carry_the_flags_where_they_accept_a_comment(flagged_class, tmp_path):
    out, roster = flagged_class
    canvas = CliRunner().invoke(export, [str(out), "--format", "canvas", "--roster", str(roster)])
    rows = list(csv.reader(canvas.stdout.splitlines()))
    assert rows[0][-1] == "Notes" and rows[1][-1] == ""
    notes = {r[0]: r[-1] for r in rows[2:]}
    assert notes["cat"] == "softmax_ce: untouched stub" and notes["fay"] == "missing: nothing handed in"
    moodle = CliRunner().invoke(export, [str(out), "--format", "moodle", "--roster", str(roster)])
    table = {r["Username"]: r for r in csv.DictReader(moodle.stdout.splitlines())}
    assert table["ann"]["routing_trap feedback"].startswith("could not grade: ")
    assert table["ann"]["softmax_ce feedback"] == ""  # graded: nothing to say
    assert table["eve"]["softmax_ce feedback"] == "missing"


def test_the_summary_names_the_missing_the_stubs_and_each_checks_failure_rate(flagged_class):
    out, _ = flagged_class
    text = (out / "summary.txt").read_text()
    missing = text.split("Missing: nothing handed in for the question")[1].split("\n\n")[0]
    assert "  dan  routing_trap" in missing and "  eve  softmax_ce" in missing
    assert "  fay  routing_trap" in missing  # the batch's --roster
    assert "  cat  softmax_ce" in text.split("Untouched stubs")[1]
    rates = text.split("softmax_ce (out of")[1].split("checks, most often failed first")[1]
    # ann, bob: full marks; dan: the loop (graded 0); cat's stub left out of the rates
    assert "33%     1 of 3" in rates
    assert (out / "summary.png").stat().st_size > 0


def test_a_loop_at_load_time_is_cut_by_the_batchs_own_short_limit(flagged_class):
    out, _ = flagged_class
    dan = [json.loads(p.read_text()) for p in (out / "results").glob("dan*softmax_ce*.json")
           if not p.name.endswith(".run.json")]
    assert dan and "did not finish within 5 s" in json.dumps(dan[0])
    meta = [json.loads(p.read_text()) for p in (out / "results").glob("dan*.run.json")]
    assert "--code-timeout 5" in meta[0]["replay"]  # the replay runs under the same limit


def test_untouched_stub_is_told_by_its_code_not_its_name(tmp_path):
    stub = exercise_path("routing_trap")
    copy = tmp_path / "whatever_name.ipynb"
    shutil.copy(stub, copy)
    assert is_untouched_stub(copy, "routing_trap")
    edited = tmp_path / "01_routing_trap.ipynb"
    edited.write_text(stub.read_text().replace("raise NotImplementedError", "return None", 1))
    assert not is_untouched_stub(edited, "routing_trap")
    assert not is_untouched_stub(copy, "softmax_ce")  # another question's stub
    assert not is_untouched_stub(copy, None)


def test_a_roster_is_read_bounded_and_plainly(tmp_path):
    assert read_roster(write(tmp_path / "r.txt", "b\n# a comment\na\n\na\n")) == ["a", "b"]
    assert read_roster(write(tmp_path / "r.csv", "Username,x\nzed,1\n")) == ["zed"]
    fifo = tmp_path / "fifo"
    import os
    os.mkfifo(fifo)
    with pytest.raises(ValueError):
        read_roster(fifo)
