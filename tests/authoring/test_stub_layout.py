"""Practice, not reading (issue 22): the stubs `grade release` makes hand out no answer,
`grade validate` proves it (each proof fails on a planted leak), `grade reveal` shows the
derivation a step at a time, and full marks lead to the solution, the kernels and the
interview (`grade start --solution`)."""
import json
import shutil

import nbformat
import pytest
from click.testing import CliRunner

from backprop_traps.grader.authoring import stub_leaks
from backprop_traps.grader.authoring.findings import FAIL, OK, QuestionReport
from backprop_traps.grader.authoring.stub_layout import (ANSWER_GRADE_ID, DERIVATION, RUN_ALL_GOES_ON, SOLUTION_ONLY,
                                          derivation_steps, is_visible_test)
from backprop_traps.grader.cli import main
from backprop_traps.grader.learner.history import FILENAME, History
from backprop_traps.grader.loading.questions import exercise_path, solution_notebooks
from conftest import REPO

QUESTIONS = list(solution_notebooks())
STUB = "01_routing_trap.ipynb"


def tags(cell):
    return cell.metadata.get("tags", [])


@pytest.mark.parametrize("question", QUESTIONS)
def test_release_keeps_the_question_and_drops_the_answers(question):
    stub = nbformat.read(str(exercise_path(question)), as_version=4)
    assert not [c for c in stub.cells if {DERIVATION, SOLUTION_ONLY} & set(tags(c))]
    answers = [c for c in stub.cells if c.metadata.get("nbgrader", {}).get("grade_id") == ANSWER_GRADE_ID]
    assert len(answers) == 1, "one 'Your derivation' cell"
    answer = answers[0]
    meta = answer.metadata.nbgrader
    assert answer.cell_type == "markdown" and meta.grade and meta.solution and meta.points > 0
    assert answer.source.startswith("## Your derivation") and "YOUR ANSWER HERE" in answer.source
    solution = nbformat.read(str(solution_notebooks()[question]), as_version=4).cells
    where = next(i for i, c in enumerate(solution) if c.metadata.get("nbgrader", {}).get("grade_id") == ANSWER_GRADE_ID)
    assert DERIVATION in tags(solution[where + 1]), "the answer cell stands where the derivation starts"
    interview = next(c for c in stub.cells if "interview" in tags(c))
    assert "**The question.**" in interview.source and f"grade interview {question}" in interview.source
    assert "gets you hired" not in interview.source and "Follow-ups" not in interview.source
    assert all(RUN_ALL_GOES_ON in tags(c) for c in stub.cells if is_visible_test(c))


@pytest.mark.parametrize("question", QUESTIONS)
def test_every_stub_passes_the_practice_proofs(question):
    from backprop_traps.grader.authoring.validate import _trap_ids
    report = QuestionReport(question)
    stub_leaks.check_stub_practice(report, question, REPO, _trap_ids(question, REPO))
    assert [f.status for f in report.findings] == [OK] * 6, report.text()


@pytest.fixture
def kit_copy(tmp_path):
    """routing_trap's solution and stub in a questions folder of their own, to plant leaks in."""
    for folder in ("solutions", "exercises"):
        (tmp_path / folder).mkdir()
        shutil.copy(REPO / folder / STUB, tmp_path / folder / STUB)
    return tmp_path


def _plant(root, text=None, drop_answer=False):
    path = root / "exercises" / STUB
    nb = nbformat.read(str(path), as_version=4)
    if text is not None:
        nb.cells.insert(1, nbformat.v4.new_markdown_cell(text))
    if drop_answer:
        nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != ANSWER_GRADE_ID]
    nbformat.write(nb, str(path))


NAMES_MISTAKES = "the specification names graded mistakes (state the convention, not the trap)"


def _failed(root):
    report = QuestionReport("routing_trap")
    stub_leaks.check_stub_practice(report, "routing_trap", root, ["avg-routing", "lost-overlap", "tie-order"])
    return [f.text for f in report.findings if f.status == FAIL]


def test_each_proof_fails_on_a_planted_leak(kit_copy):
    assert _failed(kit_copy) == []
    hired = ("an inference kernel writes only the max and forgets the winner, so the backward has "
             "nothing to route by")
    _plant(kit_copy, f"Hint: {hired}.")
    assert _failed(kit_copy) == ["the stub quotes the hired answer (1 run(s) of 12+ words)"]

    shutil.copy(REPO / "exercises" / STUB, kit_copy / "exercises" / STUB)
    _plant(kit_copy, "## The mistakes the grader names\n\n- **lost-overlap**: overwrites")
    assert _failed(kit_copy) == ["the stub lists the graded mistakes",
                                 NAMES_MISTAKES]

    for spec in ("Careful: overlapping windows must add up.",                  # a warning
                 "Where windows overlap nothing may be *lost*.",               # a trap's word, emphasised
                 "Ties follow PyTorch's tie order: the first maximum wins."):  # a trap id in words
        shutil.copy(REPO / "exercises" / STUB, kit_copy / "exercises" / STUB)
        _plant(kit_copy, spec)
        assert _failed(kit_copy) == [NAMES_MISTAKES], spec

    shutil.copy(REPO / "exercises" / STUB, kit_copy / "exercises" / STUB)
    _plant(kit_copy, "Route it with `np.add.at(dx, (planes, argmax.reshape(N * C, -1)), dout.reshape(N * C, -1))`.")
    assert _failed(kit_copy) == ["the stub's prose holds lines of the solution's code"]

    shutil.copy(REPO / "exercises" / STUB, kit_copy / "exercises" / STUB)
    _plant(kit_copy, drop_answer=True)
    assert _failed(kit_copy) == ['no "Your derivation" answer cell (a markdown cell with nbgrader grade_id '
                                 'derivation_answer)']


def test_a_specification_states_conventions_without_naming_the_mistakes():
    """Issue 37: the conventions themselves, a bold label, the question's own name and a visible
    test's failure message are not a specification that names the graded mistakes."""
    from backprop_traps.grader.authoring.named_mistakes import named_mistakes
    traps = ["avg-routing", "lost-overlap", "tie-order", "running-var-biased"]
    clean = {"cells": [
        {"cell_type": "markdown", "source": "# The routing trap\n\n- **Biased**, the variance over N.\n"
                                            "Ties: the first maximum in row-major order wins; windows may overlap."},
        {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "solution": False, "grade_id": "t"}},
         "source": 'assert ok, "a tie went to the last maximum: wrong tie order"\n'}]}
    assert named_mistakes(clean, traps, ["routing_trap"]) == []
    leaky = {"cells": [{"cell_type": "markdown", "source": "Normalise with the *biased* variance.\n"
                                                            "The running var is biased: a common slip."}]}
    found = named_mistakes(leaky, traps, ["routing_trap"])
    assert len(found) == 2 and found[0].startswith("a warning") and "*biased*" in found[1], found
    assert named_mistakes({"cells": [{"cell_type": "markdown", "source": "the running var biased"}]}, traps)


def test_the_proofs_read_words_names_and_docstrings_not_code():
    assert stub_leaks.quoted_runs("one two three four five six seven eight nine ten eleven twelve",
                                  "ONE, two; three four five six seven eight nine ten eleven twelve!")
    assert not stub_leaks.quoted_runs("one two three four five six seven eight nine ten eleven twelve",
                                      "one two three four five six seven eight nine ten eleven")
    stub = {"cells": [{"cell_type": "code", "metadata": {},
                       "source": 'def f(x):\n    """dx = dout * (1.0 - np.tanh(x) ** 2)"""\n    dx = 0\n'}]}
    solution = {"cells": [{"cell_type": "code", "metadata": {},
                           "source": "### BEGIN SOLUTION\ndx = dout * (1.0 - np.tanh(x) ** 2)  # N, D\n"
                                     "### END SOLUTION\n"}]}
    assert stub_leaks.code_in_prose(solution, stub) == ["dx = dout * (1.0 - np.tanh(x) ** 2)"]
    stub["cells"][0]["source"] = "def f(x):\n    dx = dout * (1.0 - np.tanh(x) ** 2)\n"
    assert stub_leaks.code_in_prose(solution, stub) == [], "code is the learner's to write, not prose"
    call = {"cells": [{"cell_type": "code", "metadata": {},
                       "source": "### BEGIN SOLUTION\nout = pool(x,\n           kernel_size, stride)\n### END SOLUTION\n"}]}
    named = {"cells": [{"cell_type": "markdown", "source": "`maxpool2d_forward(x, kernel_size, stride)`"}]}
    assert stub_leaks.code_in_prose(call, named) == [], "a call's last line of names is no answer"
    prose = {"cells": [{"cell_type": "markdown", "source": "Large logits overflow: subtract the max."}]}
    assert stub_leaks.listed_traps(["overflow", "sign-flipped"], prose) == []
    prose["cells"][0]["source"] = "Watch for `overflow` and sign-flipped gradients."
    assert stub_leaks.listed_traps(["overflow", "sign-flipped"], prose) == [
        "the trap id overflow", "the trap id sign-flipped"]


def grade(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_reveal_shows_one_step_per_call_and_remembers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    steps = derivation_steps(json.loads((REPO / "solutions" / STUB).read_text()))
    first = grade("reveal", "routing_trap")
    assert first.exit_code == 0 and steps[0] in first.output and steps[1] not in first.output
    assert f"step 1 of {len(steps)}" in first.output
    assert History.load().revealed("routing_trap") == 1
    second = grade("reveal", "routing_trap")
    assert steps[1] in second.output and steps[0] not in second.output
    everything = grade("reveal", "routing_trap", "--all")
    assert all(step in everything.output for step in steps)
    assert json.loads((tmp_path / FILENAME).read_text())["questions"]["routing_trap"]["revealed"] == len(steps)
    done = grade("reveal", "routing_trap")
    assert done.exit_code == 0 and "nothing more" in done.output and steps[0] not in done.output


def test_reveal_survives_a_broken_history_and_refuses_an_unknown_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / FILENAME).write_text('{"questions": {"routing_trap": {"revealed": "lots"}}}')
    out = grade("reveal", "routing_trap")
    assert out.exit_code == 0 and "step 1 of" in out.output
    unknown = grade("reveal", "no_such_trap")
    assert unknown.exit_code == 2 and "unknown question" in unknown.output and "Traceback" not in unknown.output


def test_start_with_solution_copies_the_solution_and_kernels_beside_the_stub(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    history = History.load()
    for qid, points in (("routing_trap", 12), ("tape_autodiff", 13)):
        history.record_score(qid, points, points)  # --solution comes after full marks (issue 38)
    history.save()
    out = grade("start", "routing_trap", "--solution")
    assert out.exit_code == 0, out.output
    assert (tmp_path / STUB).read_text() == (REPO / "exercises" / STUB).read_text()
    assert (tmp_path / "01_routing_trap_solution.ipynb").read_text() == (REPO / "solutions" / STUB).read_text()
    assert (tmp_path / "routing_trap_kernels.py").read_text() == (REPO / "kernels" / "routing_trap.py").read_text()
    (tmp_path / STUB).write_text((tmp_path / STUB).read_text() + " ")  # the learner's work
    again = grade("start", "routing_trap", "--solution")
    assert again.exit_code == 0 and (tmp_path / STUB).read_text().endswith(" "), "the stub is kept"
    none = grade("start", "tape_autodiff", "--solution")
    assert none.exit_code == 0 and "has no kernels" in none.output


def test_kernels_are_found_in_the_kit_when_the_questions_folder_has_none(tmp_path):
    """A wheel's questions are package data without kernels/; the kit's kernels are found beside them."""
    from backprop_traps.grader.loading.questions import kernel_path
    assert kernel_path("routing_trap", tmp_path) == REPO / "kernels" / "routing_trap.py"
    assert kernel_path("tape_autodiff", tmp_path) is None


def test_full_marks_point_to_the_solution_the_kernels_and_the_interview(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(REPO / "solutions" / STUB, tmp_path / STUB)
    out = grade(STUB)
    assert "Score: 12 / 12" in out.output, out.output
    assert "Not auto-graded (never in the score): Your derivation" in out.output
    for where in ("solutions/01_routing_trap.ipynb", "kernels/routing_trap.py", "docs/interview.md",
                  "grade start routing_trap --solution", "grade interview routing_trap"):
        assert where in out.output, where
    as_json = json.loads(grade(STUB, "--json").output)
    assert as_json["score"] == as_json["max_score"] == 12 and "manual" not in as_json


def test_after_solving_sections_only_point_at_the_reference():
    """Issue 50 item 4: a stub's "Where to go next" (or "On a GPU") cell described the kernels,
    and with them the answer; the stub keeps the heading and a pointer, and validate fails a
    stub that describes instead."""
    import nbformat
    from backprop_traps.grader.authoring.stub_layout import after_solving_pointer, to_stub_layout
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## On a GPU: the kernels\n\nThe backward reads the saved x."),
        nbformat.v4.new_markdown_cell("## Where to go next\n\nwith the identity added")])
    stub = to_stub_layout(nb, "custom_function")
    assert [c.source for c in stub.cells] == [
        after_solving_pointer("## On a GPU: the kernels", "custom_function"),
        after_solving_pointer("## Where to go next", "custom_function")]
    assert all("saved x" not in c.source and "identity" not in c.source for c in stub.cells)
