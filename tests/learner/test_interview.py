"""Every question ends in the interview: one cell tagged `interview` in the solution (and so in
the stub) with the five parts, and docs/interview.md generated from those cells, in sync."""
import shutil

import pytest
from click.testing import CliRunner

from conftest import REPO
from backprop_traps.grader.authoring import interview
from backprop_traps.grader.cli import main
from backprop_traps.grader.loading.questions import exercise_path, solution_notebooks

QUESTIONS = solution_notebooks()


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_solution_has_a_well_formed_interview_cell(question):
    source, problems = interview.read_notebook(QUESTIONS[question])
    assert source is not None, f"{question}: {problems}"
    parsed = interview.parse(source)
    assert not problems and not parsed.problems, f"{question}: {problems + parsed.problems}"
    assert parsed.question and parsed.wrong and parsed.hired and parsed.testing
    assert parsed.hired_words <= interview.MAX_HIRED_WORDS
    assert 2 <= len(parsed.follow_ups) <= 4


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_stub_carries_the_interview_question_only(question):
    """Issue 22: the stub asks the question and sends the learner to `grade interview`; the
    answers stay in the solution."""
    stub = interview.read_notebook(exercise_path(question))[0]
    asked = interview.parse(interview.read_notebook(QUESTIONS[question])[0]).question
    assert stub.startswith(interview.HEADING) and asked in " ".join(stub.split())
    assert f"grade interview {question}" in stub and "**The wrong answer.**" not in stub


def test_revision_page_is_what_the_notebooks_generate():
    page = REPO / "docs" / "interview.md"
    assert page.read_text(encoding="utf-8") == interview.render(REPO), \
        "docs/interview.md is stale: run `grade release`"


def test_revision_page_lists_every_question_with_a_cell_in_order():
    text = interview.render(REPO)
    with_cells = [q for q in QUESTIONS if interview.read_notebook(QUESTIONS[q])[0] is not None]
    positions = [text.index(f"## {QUESTIONS[q].name[:2]} · {q}\n") for q in with_cells]
    assert positions == sorted(positions) and len(positions) == len(with_cells)
    assert "The answer that gets you hired" in text and "Follow-ups" in text


GOOD = """## In the interview

**The question.** "Why?"

**The wrong answer.** "Because." It is not.

**The answer that gets you hired.** Because of the
chain rule.

**What the interviewer is testing.** Whether you know.

**Follow-ups.**
- *And then?* Then this,
  over two lines.
- *And after?* That.

**Key points.**
- the chain rule: chain rule; chain + rule
- it sums over paths: sum + path; add up
- zero: sum to 0; zero-sum
- a fourth: fourth
"""


def test_parse_reads_the_five_parts():
    parsed = interview.parse(GOOD)
    assert parsed.problems == []
    assert parsed.question == '"Why?"' and parsed.hired == "Because of the chain rule."
    assert parsed.follow_ups == [("And then?", "Then this, over two lines."), ("And after?", "That.")]
    starred = interview.parse(GOOD.replace("*And after?*", "*And `x * x`?*")).follow_ups[1]
    assert starred == ("And `x * x`?", "That.")


@pytest.mark.parametrize("broken, problem", [
    (GOOD.replace("**What the interviewer is testing.** Whether you know.\n", ""),
     "missing **What the interviewer is testing.**"),
    (GOOD.replace("chain rule.", "chain rule. " + "word " * 130), "words"),
    (GOOD.replace("- *And after?* That.\n", ""), "1 follow-ups"),
    (GOOD.replace("- *And after?* That.", "- And after? That."), "is not '- *question* answer'"),
    (GOOD.replace("## In the interview", "## Interview"), "heading"),
    (GOOD.replace("- a fourth: fourth\n", ""), "3 key points; write 4 to 7"),
    (GOOD.replace("- a fourth: fourth", "- a fourth without ways"), "is not '- phrase: a way of saying it"),
    (GOOD.replace("**Key points.**", "Key points:"), "missing **Key points.**"),
])
def test_parse_names_what_is_wrong(broken, problem):
    assert any(problem in p for p in interview.parse(broken).problems), interview.parse(broken).problems


def test_release_writes_the_page_and_check_fails_when_it_is_stale(tmp_path, monkeypatch):
    for folder in ("solutions", "exercises"):
        shutil.copytree(REPO / folder, tmp_path / folder,
                        ignore=lambda d, names: [n for n in names if not n.startswith("01_")])
    monkeypatch.setenv("BACKPROP_TRAPS_QUESTIONS", str(tmp_path))
    run = CliRunner().invoke
    assert run(main, ["release", "--check"]).exit_code == 0  # no docs/: no page to keep
    (tmp_path / "docs").mkdir()
    out = run(main, ["release", "--check"])
    assert out.exit_code == 1 and "stale: docs/interview.md" in out.stdout
    assert run(main, ["release"]).exit_code == 0
    page = (tmp_path / "docs" / "interview.md").read_text(encoding="utf-8")
    assert "## 01 · routing_trap" in page and run(main, ["release", "--check"]).exit_code == 0
    (tmp_path / "docs" / "interview.md").write_text(page.replace("hired", "fired"), encoding="utf-8")
    assert run(main, ["release", "--check"]).exit_code == 1


def test_grade_list_points_to_the_revision_page(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["list"])
    assert out.exit_code == 0 and "docs/interview.md" in out.stdout
