"""`grade interview`: the JSON mode, its usage errors, the interactive rehearsal in a real
pseudo-terminal, what it records, which question is due, and `grade list`'s columns."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from conftest import REPO
from backprop_traps.grader.cli import main
from backprop_traps.grader.learner import rehearsal
from backprop_traps.grader.learner.history import FILENAME, History
from backprop_traps.grader.loading.questions import solution_notebooks

GOOD = ("The derivative of a max only goes to the winner of each window, so the forward must save "
        "the argmax index; overlapping windows accumulate, and ties go to the first maximum.")
CONTRACT_KEYS = {"question", "hit", "of", "points", "wrong_answer", "hired_answer", "follow_ups"}


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKPROP_TRAPS_QUESTIONS", raising=False)
    return tmp_path


def run(*args, stdin=None):
    return CliRunner().invoke(main, list(args), input=stdin)


def test_json_checks_an_answer_file_against_the_key_points(here):
    (here / "answer.txt").write_text(GOOD, encoding="utf-8")
    out = run("interview", "routing_trap", "--answer", "answer.txt", "--json")
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert set(doc) == CONTRACT_KEYS and doc["question"] == "routing_trap"
    assert doc["of"] == len(doc["points"]) == 5 and doc["hit"] == 4
    assert all(set(p) == {"point", "hit", "evidence", "why_not"} and isinstance(p["hit"], bool)
               for p in doc["points"])  # the contract's two keys, and the evidence
    assert [p["hit"] for p in doc["points"]] == [True, True, True, True, False]
    assert all(p["evidence"] and p["why_not"] is None for p in doc["points"][:4])
    assert "overlapping" in doc["points"][2]["evidence"] and "accumulate" in doc["points"][2]["evidence"]
    assert doc["points"][4]["evidence"] is None and doc["points"][4]["why_not"] == "nothing in the answer says it"
    assert doc["wrong_answer"].startswith('"It\'s a precision problem') and "routing" in doc["hired_answer"]
    assert 2 <= len(doc["follow_ups"]) <= 4
    assert all(set(f) == {"question", "answer"} and f["answer"] for f in doc["follow_ups"])
    assert not (here / FILENAME).exists(), "--json records nothing"


def test_json_reads_stdin_and_an_empty_answer_hits_nothing(here):
    doc = json.loads(run("interview", "softmax_ce", "--answer", "-", "--json", stdin=GOOD).stdout)
    assert doc["question"] == "softmax_ce" and doc["of"] == 5
    empty = json.loads(run("interview", "softmax_ce", "--answer", "-", "--json", stdin="").stdout)
    assert empty["hit"] == 0 and not any(p["hit"] for p in empty["points"])
    binary = run("interview", "softmax_ce", "--answer", "-", "--json",
                 stdin=b"\xff\xfe The gradient is p - y. \x00")
    assert binary.exit_code == 0 and json.loads(binary.stdout)["hit"] == 1
    listed = run("interview", "softmax_ce", "--answer", "-", "--json", stdin="Softmax minus one-hot. Row max.")
    assert json.loads(listed.stdout)["hit"] == 0  # words with no claim hit nothing
    why = json.loads(listed.stdout)["points"][0]["why_not"]
    assert why.startswith("named, not claimed") and "Softmax" in why


@pytest.mark.parametrize("args, sentence", [
    (["nope", "--answer", "-", "--json"], "unknown question 'nope'; the questions are: routing_trap"),
    (["routing_trap", "--answer", "missing.txt", "--json"], "missing.txt does not exist"),
    (["routing_trap", "--answer", ".", "--json"], ". is a folder"),
    (["routing_trap", "--json"], "--json needs --answer FILE"),
    (["nope"], "unknown question 'nope'"),
])
def test_usage_errors_exit_2_with_one_sentence(here, args, sentence):
    out = run("interview", *args, stdin="")
    assert out.exit_code == 2 and sentence in out.stderr and out.stdout == ""
    assert "Traceback" not in out.output and "Usage:" not in out.stderr


def test_a_written_answer_without_json_is_reported_and_recorded(here):
    out = run("interview", "routing_trap", "--answer", "-", stdin=GOOD)
    assert out.exit_code == 0 and "4/5 key points" in out.stdout and "[x]" in out.stdout
    assert "The answer that gets you hired:" in out.stdout and f"Recorded in {FILENAME}" in out.stdout
    (entry,) = History.load(here).interviews("routing_trap")
    assert entry["hit"] == 4 and entry["of"] == 5 and entry["date"] == rehearsal.today()


def test_the_json_path_imports_no_numpy(here):
    code = ("import sys\nfrom backprop_traps.grader.cli import main\n"
            "try:\n    main(['interview', 'layernorm_backward', '--answer', '-', '--json'])\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "heavy = [m for m in ('numpy', 'nbformat', 'nbgrader', 'numba') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    done = subprocess.run([sys.executable, "-c", code], input="dx sums to zero", capture_output=True,
                          text=True, cwd=here, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["question"] == "layernorm_backward"


def test_interactive_rehearsal_in_a_terminal(here):
    pexpect = pytest.importorskip("pexpect")
    beside = Path(sys.executable).with_name("grade")  # this Python's own install first
    grade = str(beside) if beside.is_file() else shutil.which("grade")
    child = pexpect.spawn(grade, ["interview", "routing_trap"], cwd=str(here), encoding="utf-8",
                          timeout=30, env={**os.environ, "NO_COLOR": "1"}, dimensions=(40, 120))
    child.expect("What is wrong, and what does the training kernel need")  # the question, then the prompt
    child.expect("an empty line ends it")
    child.sendline("the gradient only goes to the winner, so save the argmax")
    child.expect("> ")
    child.sendline("")
    child.expect("pre-ticked")
    child.expect(r"1/5  each window's gradient goes only to the input that won it\s+you said: «[^»]*winner»\s+\[Y/n\]")
    child.sendline("")  # Enter accepts the pre-ticked point
    child.expect(r"2/5 .*\[Y/n\]")
    child.sendline("n")  # found in the text, but the learner did not really say it
    child.expect(r"3/5 .*\s+not counted: nothing in the answer says it\s+\[y/N\]")
    child.sendline("y")  # said aloud, not typed
    child.expect(r"4/5 .*\[y/N\]")
    child.sendline("")
    child.expect(r"5/5 .*\[y/N\]")
    child.sendline("")
    child.expect("Checklist: 2/5 key points")
    child.expect(f"Recorded in {FILENAME}")
    child.expect("The wrong answer most candidates give")
    child.expect("precision problem")
    child.expect("The answer that gets you hired")
    child.expect(r"1/4  What does caching the argmax cost\?")
    child.expect(r"\(Enter\)")
    assert "8 bytes" not in child.before  # the answer waits for Enter
    child.sendline("")
    child.expect("8 bytes")
    for _ in range(3):
        child.expect(r"\(Enter\)")
        child.sendline("")
    child.expect(r"Next due: `grade interview per_step_update_trap`")  # never rehearsed, in order
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    (entry,) = History.load(here).interviews("routing_trap")
    assert (entry["hit"], entry["of"]) == (2, 5)


def test_spoken_answer_ticks_default_to_no_and_end_of_input_is_not_an_error(here):
    out = run("interview", "vram_trap", stdin="\n")  # answered aloud, then the input ends
    assert out.exit_code == 0 and "Checklist: 0/7 key points" in out.stdout
    assert "Follow-ups (4)" in out.stdout and "Traceback" not in out.output
    assert History.load(here).interviews("vram_trap")[0]["hit"] == 0


def test_grade_interview_without_an_id_rehearses_the_most_overdue_spoken_answer(here, monkeypatch):
    from backprop_traps.grader.learner import review
    known = list(solution_notebooks())
    h = History.load(here)
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2025-12-20T09:00")
    h.record_interview(known[3], 1, 6, rehearsal.today())
    review.record_spoken(h, known[3], 1, 6)  # a failure: due again the next day
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2026-01-01T09:00")
    for question in known[:3] + known[4:]:  # every other answer said in full: due in a few days
        h.record_interview(question, 6, 6, rehearsal.today())
        review.record_spoken(h, question, 6, 6)
    h.save()
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2026-01-02T09:00")
    out = run("interview", "--answer", "-", "--json", stdin="")
    assert json.loads(out.stdout)["question"] == known[3]  # the only one overdue
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2026-03-01T09:00")
    out = run("interview", "--answer", "-", "--json", stdin="")
    assert json.loads(out.stdout)["question"] == known[3]  # all overdue now: it most of all
    h.sections.pop("review")
    h.questions.pop(known[9])
    h.questions[known[3]]["interviews"] = [{"date": "2026-01-01", "hit": 6, "of": 6}]
    h.save()  # an old history: its interviews are replayed, none is due, and the new one comes first
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2026-01-02T09:00")
    assert f"{known[9]} · question 10" in run("interview", stdin="\n").stdout


def _questions_with_derivation(tmp_path):
    """A questions folder with routing_trap's solution, three of its cells tagged derivation."""
    root = tmp_path / "kit"
    (root / "solutions").mkdir(parents=True)
    source = solution_notebooks()["routing_trap"]
    nb = nbformat.read(str(source), as_version=4)
    for cell in nb.cells:  # exactly three steps, whatever the shipped notebook has
        cell.metadata["tags"] = [t for t in cell.metadata.get("tags", []) if t != "derivation"]
    for cell in [c for c in nb.cells if c.cell_type == "markdown"][1:4]:
        cell.metadata["tags"] = cell.metadata.get("tags", []) + ["derivation"]
    nbformat.write(nb, str(root / "solutions" / source.name))
    return root


def test_grade_list_shows_code_interview_and_derivation_side_by_side(here):
    root = _questions_with_derivation(here)
    h = History.load(here)
    h.record_score("routing_trap", 12, 12)
    h.record_score("routing_trap", 7, 12)
    h.record_interview("routing_trap", 2, 5, "2026-01-01")
    h.record_interview("routing_trap", 4, 5, "2026-01-02")
    h.questions["routing_trap"]["revealed"] = 2  # as `grade reveal` writes it
    h.save()
    out = run("list", "--questions-dir", str(root))
    assert out.exit_code == 0, out.output
    header, row = [ln for ln in out.stdout.splitlines() if "routing_trap" in ln or "question" in ln][1:3]
    assert header.split() == ["question", "level", "code", "(last,", "best)", "interview", "derivation",
                              "start", "with"]
    cells = row.split()
    assert cells[:2] == ["01", "routing_trap"] and "7/12, best 12/12" in row
    assert row.index("7/12") < row.index("4/5") < row.index("2/3 shown")
    assert header.index("interview") == row.index("4/5") and header.index("derivation") == row.index("2/3")


def test_grade_list_before_any_work(here):
    out = run("list")
    row = next(ln for ln in out.stdout.splitlines() if " softmax_ce " in ln)
    cells = row.split()  # no interview yet; none of the derivation's steps shown
    assert "not graded" in row and cells[-6] == "-" and cells[-5].startswith("0/")
    assert cells[-4:] == ["shown", "grade", "start", "softmax_ce"]
    assert "`grade interview`" in out.stdout


def test_a_question_without_key_points_is_never_due_but_can_be_checked(here):
    root = here / "kit"
    (root / "solutions").mkdir(parents=True)
    for qid in ("routing_trap", "softmax_ce"):
        source = solution_notebooks()[qid]
        nb = nbformat.read(str(source), as_version=4)
        if qid == "routing_trap":  # written before key points existed
            cell = next(c for c in nb.cells if "interview" in c.metadata.get("tags", []))
            cell.source = cell.source[:cell.source.index("**Key points.**")]
        nbformat.write(nb, str(root / "solutions" / source.name))
    doc = json.loads(run("interview", "--questions-dir", str(root), "--answer", "-", "--json", stdin="").stdout)
    assert doc["question"] == "softmax_ce"
    bare = json.loads(run("interview", "routing_trap", "--questions-dir", str(root), "--answer", "-", "--json",
                          stdin=GOOD).stdout)
    assert bare["hit"] == bare["of"] == 0 and bare["points"] == [] and bare["hired_answer"]
    spoken = run("interview", "routing_trap", "--questions-dir", str(root), stdin="\n")
    assert spoken.exit_code == 0 and "no key points yet" in spoken.stdout
    assert History.load(here).interviews("routing_trap") == []


@pytest.mark.parametrize("question", list(solution_notebooks()))
def test_every_question_rehearses_as_json_and_interactively(here, question):
    hired = rehearsal.load(question, REPO).interview.hired
    doc = json.loads(run("interview", question, "--answer", "-", "--json", stdin=hired).stdout)
    assert doc["of"] >= 4 and doc["hit"] == doc["of"] and len(doc["follow_ups"]) >= 2
    out = run("interview", question, stdin=hired + "\n\n" + "\n" * 20)
    assert out.exit_code == 0 and f"Checklist: {doc['of']}/{doc['of']} key points" in out.stdout
    assert out.stdout.count("(Enter)") == len(doc["follow_ups"])


def test_a_huge_answer_is_refused_at_once_with_one_sentence(here):
    """One cap for every way an answer comes (issue 43): past it, the answer is refused, not cut
    (a cut answer scored differently from the same text pasted into `grade mock`)."""
    huge = GOOD + " filler" * (rehearsal.MAX_ANSWER_BYTES // 3)
    (here / "huge.txt").write_text(huge, encoding="utf-8")
    for args, stdin in ((["--answer", "huge.txt"], None), (["--answer", "-"], huge)):
        out = run("interview", "routing_trap", *args, "--json", stdin=stdin)
        assert out.exit_code == 2 and "over 64 KB" in out.output and out.stdout == "", out.output
        assert "Traceback" not in out.output and len(out.output.strip().splitlines()) == 1
    just = GOOD + " " * (rehearsal.MAX_ANSWER_BYTES - len(GOOD.encode()))  # exactly the cap: checked
    (here / "just.txt").write_text(just, encoding="utf-8")
    assert json.loads(run("interview", "routing_trap", "--answer", "just.txt", "--json").stdout)["hit"] == 4
