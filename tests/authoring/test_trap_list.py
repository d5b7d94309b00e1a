"""`grade validate` checks that a solution's list of mistakes is its checks' list of traps."""
import shutil

import nbformat

from backprop_traps.grader.authoring.findings import FAIL, OK, QuestionReport
from backprop_traps.grader.authoring.trap_list import check_trap_list, listed_traps
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.loading.questions import solution_notebooks


def test_every_shipped_solution_lists_exactly_its_traps():
    for question, path in solution_notebooks().items():
        assert sorted(listed_traps(path) or []) == sorted(t.id for t in load_question(question).traps), question


def test_a_list_that_misses_a_trap_or_names_an_unknown_one_fails(tmp_path):
    (tmp_path / "solutions").mkdir()
    path = tmp_path / "solutions" / solution_notebooks()["softmax_ce"].name
    shutil.copy(solution_notebooks()["softmax_ce"], path)
    report = QuestionReport("softmax_ce")
    check_trap_list(report, "softmax_ce", tmp_path)
    assert [f.status for f in report.findings] == [OK]
    nb = nbformat.read(str(path), as_version=4)
    cell = next(c for c in nb.cells if c.source.startswith("## The mistakes the grader"))
    cell.source = cell.source.replace("**overflow**", "**overflowed**")
    nbformat.write(nb, str(path))
    report = QuestionReport("softmax_ce")
    check_trap_list(report, "softmax_ce", tmp_path)
    finding = report.findings[0]
    assert finding.status == FAIL and "differs from the checks' traps" in finding.text
    assert any("overflow" in d and "does not list" in d for d in finding.details)
    assert any("overflowed" in d and "no check names" in d for d in finding.details)
