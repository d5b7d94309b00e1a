"""The notebooks are real: they execute in a Jupyter kernel, carry no outputs, and the
stubs are exactly what nbgrader's preprocessors make of the solutions, leaking nothing."""
import re

import nbformat
import pytest
from backprop_traps.grader.authoring.notebook_client import notebook_client

from backprop_traps.grader.loading.notebook import cell_source
from backprop_traps.grader.loading.questions import exercise_path, solution_notebooks
from backprop_traps.grader.authoring.release import release
from backprop_traps.grader.authoring.stub_layout import is_visible_test

QUESTIONS = list(solution_notebooks())
_SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def execute(path, tmp_path):
    nb = nbformat.read(str(path), as_version=4)
    notebook_client(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def test_every_question_is_here():
    assert {"routing_trap", "per_step_update_trap", "vram_trap", "softmax_ce"} <= set(QUESTIONS)


@pytest.mark.parametrize("question", QUESTIONS)
def test_solution_runs_clean(question, tmp_path):
    execute(solution_notebooks()[question], tmp_path)


@pytest.mark.parametrize("question", QUESTIONS)
def test_stub_runs_to_its_end_as_run_all_does(question, tmp_path):
    """Visible tests fail with NotImplementedError and do not stop Run All (tag
    `raises-exception`); the demo cells are skipped (tests/notebooks/test_run_all.py grades a stub)."""
    nb = nbformat.read(str(exercise_path(question)), as_version=4)
    notebook_client(nb, timeout=180, kernel_name="python3", skip_cells_with_tag="demo",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    first_test = next(c for c in nb.cells if is_visible_test(c))
    assert [o.get("ename") for o in first_test.outputs if o.get("output_type") == "error"] == \
        ["NotImplementedError"]


def test_exercises_are_what_release_generates():
    assert release(check=True) == [], "exercises/ is stale: run `grade release`"


@pytest.mark.parametrize("question", QUESTIONS)
def test_committed_notebooks_carry_no_outputs(question):
    for path in (solution_notebooks()[question], exercise_path(question)):
        nb = nbformat.read(str(path), as_version=4)
        assert all(not c.get("outputs") and c.get("execution_count") is None
                   for c in nb.cells if c.cell_type == "code"), path


@pytest.mark.parametrize("question", QUESTIONS)
def test_stub_leaks_no_solution_or_hidden_test(question):
    solution = nbformat.read(str(solution_notebooks()[question]), as_version=4)
    stub_text = exercise_path(question).read_text()
    assert "BEGIN SOLUTION" not in stub_text and "BEGIN HIDDEN TESTS" not in stub_text
    stub = "\n".join(cell_source(c) for c in nbformat.read(str(exercise_path(question)), as_version=4).cells)
    bodies = [m.group(1) for c in solution.cells if c.cell_type == "code"
              for m in _SOLUTION.finditer(cell_source(c))]
    assert bodies, "the solution has no marked solution regions"
    for body in bodies:
        lines = [ln.strip() for ln in body.splitlines() if len(ln.strip()) > 25]
        leaked = [ln for ln in lines if ln in stub]
        assert not leaked, leaked
