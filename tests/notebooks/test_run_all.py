"""Jupyter's Run All never leaves a learner without a grade: in a real kernel (nbclient runs a
notebook as Run All does, honouring `raises-exception`), a stub's failing visible tests do not
stop it, and its "Grade it" cell reports. A Jupyter "Duplicate" grades itself, not the original."""
import shutil

import nbformat
import pytest
from backprop_traps.grader.authoring.notebook_client import notebook_client

from backprop_traps.grader.authoring.artifacts import raised
from backprop_traps.grader.authoring.stub_layout import is_visible_test
from conftest import REPO

STUB = "01_routing_trap.ipynb"


def run_all(path, folder):
    """Execute the notebook in ``folder`` as Run All does; raises if a cell stops it."""
    nb = nbformat.read(str(path), as_version=4)
    notebook_client(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def printed(cell):
    """What a cell shows as text: printed, or displayed (the report's plain-text fallback)."""
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)


def test_run_all_on_a_fresh_stub_reaches_the_grade_cell(tmp_path):
    shutil.copy(REPO / "exercises" / STUB, tmp_path / STUB)
    nb = run_all(tmp_path / STUB, tmp_path)
    tests = [c for c in nb.cells if is_visible_test(c)]
    assert tests and all(raised(c) == "NotImplementedError" for c in tests)
    report = printed(nb.cells[-1])
    assert f"routing_trap  ·  {STUB}" in report and "Score: 0 / 12" in report, report


def test_a_duplicate_grades_itself_not_the_original(tmp_path):
    shutil.copy(REPO / "exercises" / STUB, tmp_path / STUB)  # the untouched original
    copy = tmp_path / "01_routing_trap-Copy1.ipynb"         # where the learner worked
    shutil.copy(REPO / "solutions" / STUB, copy)
    nb = run_all(copy, tmp_path)
    report = printed(nb.cells[-1])
    assert f"routing_trap  ·  {copy.name}" in report and "Score: 12 / 12" in report, report


@pytest.mark.parametrize("question", ["softmax_ce", "vram_trap"])
def test_run_all_goes_past_failing_demos_too(question, tmp_path):
    """A stub whose demo cells call the learner's functions still reaches its last cell (the
    grade cell itself is skipped here: the first test grades)."""
    from backprop_traps.grader.loading.questions import exercise_path
    nb = nbformat.read(str(exercise_path(question)), as_version=4)
    nb.cells[-1].metadata.setdefault("tags", []).append("skip-execution")
    notebook_client(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert raised(next(c for c in nb.cells if is_visible_test(c))) == "NotImplementedError"
