"""The notebook grades what the learner sees (issue 38, item 2), in a real kernel (nbclient
runs a notebook as JupyterLab's Run All does, honouring `raises-exception`):

- Run All reaches "Grade it" past a syntax error, an exception while defining and an undefined
  name in the learner's own cell, and the report says it is the learner's error, naming the
  cell as JupyterLab numbers it ([n]);
- the report is HTML (PASS and FAIL in colour, no hard wraps, no path outside the folder, the
  notebook's own calls instead of terminal commands), its plain-text fallback what `grade` prints;
- a saved file that is not what the kernel ran is said first, and never reads as full marks;
- `grade_this_notebook(hint=True)` and `(solution=True)` work from the notebook.
"""
import re
import shutil

import nbformat
import pytest
from click.testing import CliRunner
from backprop_traps.grader.authoring.notebook_client import notebook_client

from backprop_traps.grader.cli import main
from backprop_traps.grader.loading.questions import exercise_path, solution_notebooks
from conftest import REPO

STUB = "01_routing_trap.ipynb"
LEARNER_CELL = 4  # maxpool2d_forward, the learner's first code cell in the stub


@pytest.mark.parametrize("question", list(solution_notebooks()))
def test_every_code_cell_of_a_stub_lets_run_all_go_on(question):
    """`grade release` tags every code cell but "Grade it" (the learner's own cells first)."""
    nb = nbformat.read(str(exercise_path(question)), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[-1].metadata["nbgrader"]["grade_id"] == "grade_this_notebook"
    learner = [c for c in code if c.metadata.get("nbgrader", {}).get("solution")]
    assert learner and all("raises-exception" in c.metadata.get("tags", []) for c in code[:-1])


def run_all(nb, folder):
    notebook_client(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def shown(cell, kind="text/plain"):
    """What a cell shows: its printed text and displayed data of ``kind``."""
    parts = []
    for out in cell.outputs:
        if out.get("output_type") == "stream" and kind == "text/plain":
            parts.append(out.get("text", ""))
        elif out.get("output_type") in ("display_data", "execute_result"):
            parts.append(out.get("data", {}).get(kind, ""))
    return "".join(parts)


def saved_and_run(folder, source, edit=None):
    """``source`` (a kit notebook) copied into ``folder`` as the stub's name, with ``edit`` applied
    to the learner's first code cell, saved to disk and then run as Run All."""
    nb = nbformat.read(str(source), as_version=4)
    if edit is not None:
        nb.cells[LEARNER_CELL].source = edit
    nbformat.write(nb, str(folder / STUB))
    return run_all(nb, folder)


@pytest.mark.parametrize("edit, told", [
    ("def maxpool2d_forward(x, kernel_size, stride:\n    return x\n", "is not valid Python"),
    ("def maxpool2d_forward(x, kernel_size, stride=int('two')):\n    return x\n", "raised ValueError"),
    ("def maxpool2d_forward(x, kernel_size, stride=STRIDE):\n    return x\n", "raised NameError"),
], ids=["syntax-error", "exception-at-definition", "undefined-name"])
def test_run_all_reaches_the_grade_past_the_learners_own_error(edit, told, tmp_path):
    nb = saved_and_run(tmp_path, REPO / "exercises" / STUB, edit)
    learner = nb.cells[LEARNER_CELL]
    assert any(o.get("output_type") == "error" for o in learner.outputs), "the cell itself shows its error"
    text, html = shown(nb.cells[-1]), shown(nb.cells[-1], "text/html")
    assert "Score: 0 / 12 points" in text and told in text, text
    assert told in html and "Warnings" in html
    number = learner.execution_count
    assert f"cell [{number}]" in html, (number, html[:2000])  # as JupyterLab numbers it


def test_the_report_is_html_with_the_terminal_text_as_its_fallback(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = saved_and_run(tmp_path, REPO / "solutions" / STUB)
    text, html = shown(nb.cells[-1]), shown(nb.cells[-1], "text/html")
    assert "Score: 12 / 12 points" in text and "Full marks on routing_trap" in text
    assert re.search(r"background:#1a7f37[^>]*>PASS<", html) and "white-space:normal" in html
    assert str(tmp_path) not in html and "site-packages" not in html and "solutions/" not in html
    assert "grade_this_notebook(solution=True)" in html and "grade start" not in html
    terminal = CliRunner().invoke(main, [STUB]).output  # `grade` in the notebook's folder, run again
    assert text.strip() == terminal.strip()


def test_a_saved_file_that_is_not_what_ran_is_said_first_and_never_full_marks(tmp_path):
    nb = nbformat.read(str(REPO / "exercises" / STUB), as_version=4)  # what the kernel runs
    shutil.copy(REPO / "solutions" / STUB, tmp_path / STUB)            # what is saved: full marks
    run_all(nb, tmp_path)
    text, html = shown(nb.cells[-1]), shown(nb.cells[-1], "text/html")
    assert text.startswith("This grades 01_routing_trap.ipynb as saved on disk, but"), text[:300]
    assert "Score: none" in text and "#1a7f37" not in html
    assert "not what this kernel ran" in html.split("PASS")[0]        # it leads, above the checks
    assert "Full marks" not in text and "Full marks" not in html


def grade_cell(arguments: str):
    """A cell that calls the grade from the notebook (tagged demo: grading never runs it)."""
    return nbformat.v4.new_code_cell("from backprop_traps.grader.notebook_grade import grade_this_notebook\n"
                                     f"grade_this_notebook('routing_trap', {arguments})",
                                     metadata={"tags": ["demo"]})


def test_hint_and_solution_from_the_notebook(tmp_path):
    nb = nbformat.read(str(REPO / "solutions" / STUB), as_version=4)
    nb.cells.append(grade_cell("solution=True"))
    nbformat.write(nb, str(tmp_path / STUB))
    run_all(nb, tmp_path)
    assert "Copied the reference solution of routing_trap to 01_routing_trap_solution.ipynb" in shown(nb.cells[-1])
    assert (tmp_path / "01_routing_trap_solution.ipynb").is_file()

    wrong = nbformat.read(str(REPO / "solutions" / STUB), as_version=4)
    backward = next(c for c in wrong.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "maxpool2d_backward")
    backward.source += "\n\n_right = maxpool2d_backward\nmaxpool2d_backward = lambda *a: 2 * _right(*a)\n"
    wrong.cells.append(grade_cell("hint=True, solution=True"))
    (tmp_path / "01_routing_trap_solution.ipynb").unlink()
    nbformat.write(wrong, str(tmp_path / STUB))
    run_all(wrong, tmp_path)
    text = shown(wrong.cells[-1])
    assert re.search(r'Hint 1 of \d for "', text), text[-1500:]
    assert "Not yet" in text and not (tmp_path / "01_routing_trap_solution.ipynb").exists()


def test_learner_text_in_the_html_is_escaped():
    """A learner's exception message or output reaches the report: as text, never as markup."""
    from backprop_traps.grader.engine.results import CheckResult, GradeResult
    from backprop_traps.grader.learner.report_html import render_html
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    result = GradeResult("nb.ipynb", "routing_trap", 0.0, 2.0, seed=1,
                         tests=[CheckResult("a check", 0.0, 2.0, False, feedback=f"f() raised ValueError: {evil}")],
                         warnings=[f"cell 3 raised ValueError: {evil}"])
    html = render_html(result, "nb.ipynb", {3: "[7]"})
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert "cell [7] raised" in html


def test_an_unsaved_edit_run_after_a_first_run_all_is_said_first_and_never_full_marks(tmp_path):
    """Issue 51, item 1: Run All (full marks), edit the backward into a wrong answer without saving,
    run that cell and the grade cell: the report says the kernel ran an unsaved edit, shows the
    saved file's checks in grey and no score, and never "3 of 3 pass" unqualified."""
    nb = nbformat.read(str(REPO / "solutions" / STUB), as_version=4)
    nbformat.write(nb, str(tmp_path / STUB))
    client = notebook_client(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        assert "Score: 12 / 12 points" in shown(nb.cells[-1])
        place = next(i for i, c in enumerate(nb.cells)
                     if c.metadata.get("nbgrader", {}).get("grade_id") == "maxpool2d_backward")
        nb.cells[place].source += "\n\n_right = maxpool2d_backward\nmaxpool2d_backward = lambda *a: 2 * _right(*a)\n"
        client.execute_cell(nb.cells[place], place)  # not saved
        client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
    text, html = shown(nb.cells[-1]), shown(nb.cells[-1], "text/html")
    assert text.startswith("This grades 01_routing_trap.ipynb as saved on disk, but 1 of its code cells is"), text
    assert "`maxpool2d_backward` is this kernel's from an edited, unsaved version" in text, text[:600]
    for report in (text, html):
        assert "Full marks" not in report and "12 / 12" not in report and "Score: none" in report
        assert "Visible tests of the saved file (not scored, not what ran above)" in report
    assert "#1a7f37" not in html.split("Score: none")[0]  # no green PASS for the saved file's checks
