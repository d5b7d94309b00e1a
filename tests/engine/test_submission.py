"""Every way a submission file can be unusable becomes a clear sentence, never a traceback."""
import json

import pytest

from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
from conftest import REPO

SOLUTION = REPO / "solutions" / "01_routing_trap.ipynb"


def notebook(cells, question="routing_trap"):
    meta = {"backprop_traps": {"question": question}} if question else {}
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": meta, "cells": cells})


def code(src, **meta):
    return {"cell_type": "code", "source": src, "metadata": meta, "outputs": [], "execution_count": None}


@pytest.mark.parametrize("content, says", [
    (b"", "is empty"),
    (b"   \n", "is empty"),
    (b'{"cells": [', "not valid JSON"),
    (b'{"nbformat": 4}', "not a Jupyter notebook"),
    (b"\xff\xfe\x00bad", "not UTF-8"),
])
def test_broken_notebooks(tmp_path, content, says):
    path = tmp_path / "answer.ipynb"
    path.write_bytes(content)
    result = grade_path(path, question="routing_trap")
    assert says in result.error
    assert result.score == 0 and result.max_score == 12 and result.tests == []


def test_missing_file_folder_and_unknown_suffix(tmp_path):
    assert "cannot read" in grade_path(tmp_path / "nope.ipynb", question="routing_trap").error
    assert "is a folder" in grade_path(tmp_path, question="routing_trap").error
    (tmp_path / "a.txt").write_text("x = 1")
    assert "neither a notebook" in grade_path(tmp_path / "a.txt", question="routing_trap").error


def test_question_resolution(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    assert "could not tell which question" in grade_path(path).error
    path.write_text("# question: no_such_question\n")
    assert "unknown question 'no_such_question'" in grade_path(path).error
    path.write_text("# question: no_such_question\n")
    assert grade_path(path, question="routing_trap").question == "routing_trap"  # the flag wins


def test_syntax_error_is_a_graded_result(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("# question: routing_trap\ndef maxpool2d_forward(x:\n")
    result = grade_path(path)
    assert result.error is None and result.score == 0
    assert "SyntaxError" in result.warnings[0] and "line 2" in result.warnings[0]  # said once
    assert "maxpool2d_forward is not defined" in result.tests[0].feedback


def test_test_cells_and_demos_are_not_graded_magics_do_not_break():
    nb = parse_notebook(notebook([
        code("%matplotlib inline\nimport numpy as np\n!pip install nothing"),
        code("def f():\n    return 1", nbgrader={"solution": True, "grade": False}),
        code("assert f() == 2", nbgrader={"solution": False, "grade": True, "points": 1}),
        code("make_plots()", tags=["demo"]),
        code("%%bash\necho hi"),
        code("def g():\n    return 2"),  # a cell the learner added
    ]))
    src = graded_code(nb)
    compile(src, "x", "exec")
    assert "def f()" in src and "def g()" in src
    assert "assert f() == 2" not in src and "make_plots" not in src and "\necho hi" not in src


def test_notebook_without_nbgrader_metadata(tmp_path):
    source = graded_code(parse_notebook(SOLUTION.read_text()))
    path = tmp_path / "plain.ipynb"
    path.write_text(notebook([code(source)], question=None))
    result = grade_path(path, question="routing_trap")
    assert result.score == result.max_score
