"""A learner's notebook as Jupyter users leave it is graded like "Run All" going on past errors
(as nbgrader does): a raising or broken cell is one warning with its cell number, later
definitions count (the last one wins), magics are skipped and shell lines never run; and
a call that fails on state an earlier call left in a global says so."""
import json

import pytest

from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.learner.report import render
from conftest import REPO, solution_source

SOLUTION = REPO / "solutions" / "01_routing_trap.ipynb"


def code(src, **meta):
    return {"cell_type": "code", "source": src, "metadata": meta, "outputs": [], "execution_count": None}


def solution_cells():
    """The routing_trap solution's graded code cells, as a learner's notebook holds them."""
    nb = json.loads(SOLUTION.read_text())
    cells = []
    for cell in nb["cells"]:
        meta = cell.get("metadata") or {}
        nbgrader = meta.get("nbgrader") or {}
        if cell["cell_type"] != "code" or "demo" in (meta.get("tags") or []):
            continue
        if nbgrader.get("grade") and not nbgrader.get("solution"):
            continue
        cells.append(code("".join(cell["source"])))
    return cells


def write(tmp_path, cells, name="messy.ipynb"):
    path = tmp_path / name
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "cells": cells,
                                "metadata": {"backprop_traps": {"question": "routing_trap"}}}))
    return path


@pytest.fixture
def messy(tmp_path):
    """Magics and a shell line first, a scratch cell that raises, a cell that is not Python, a
    wrong early definition, a %%bash cell, then the solution (one function under %%time)."""
    marker = tmp_path / "shell_ran"
    cells = [code(f"%load_ext autoreload\n%autoreload 2\n!touch {marker}\nimport numpy as np"),
             code("def avgpool2d_backward(dout, input_shape, kernel_size, stride):\n    return None"),
             code("out = maxpool2d_forward(x_scratch, 2, 2)  # abandoned"),
             code("def broken(:\n    pass"),
             code(f"%%bash\ntouch {marker}")]
    for cell in solution_cells():
        if cell["source"].startswith("def maxpool2d_forward"):
            cell["source"] = "%%time\n" + cell["source"]
        cells.append(cell)
    cells.append(code("np.zeros?\nfiles = !ls\n%timeit maxpool2d_forward"))
    return write(tmp_path, cells), marker


def test_a_messy_notebook_gets_what_its_definitions_earn(messy):
    path, marker = messy
    result = grade_path(path)
    assert result.error is None and result.score == result.max_score, render(result, False)
    assert not marker.exists()  # a shell line and a %%bash cell never run
    assert len(result.warnings) == 2
    name_error, syntax_error = result.warnings
    assert name_error.startswith("cell 3 raised NameError") and "line 1: `out = maxpool2d_forward" in name_error
    assert syntax_error.startswith("cell 4 is not valid Python") and "SyntaxError" in syntax_error


def test_warnings_show_once_in_the_report_and_the_json(messy):
    path, _ = messy
    result = grade_path(path)
    text = render(result, False)
    assert text.count("raised NameError") == 1 and text.count("SyntaxError") == 1
    assert text.index("Warnings") < text.index("PASS")
    doc = result.to_json()
    assert doc["warnings"] == result.warnings
    assert not any("NameError" in t["feedback"] for t in doc["tests"])


def test_the_last_definition_wins(tmp_path):
    wrong = code("def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):\n"
                 "    return avgpool2d_backward(dout, input_shape, kernel_size, stride)")
    fixed_later = grade_path(write(tmp_path, [wrong] + solution_cells(), "later.ipynb"))
    assert fixed_later.score == fixed_later.max_score
    broken_later = grade_path(write(tmp_path, solution_cells() + [wrong], "broken.ipynb"))
    assert broken_later.score < broken_later.max_score
    assert "avg-routing" in {t.trap for t in broken_later.tests}


def test_definitions_before_the_error_in_a_cell_count(tmp_path):
    cells = solution_cells()
    cells[-1]["source"] += "\n\nraise RuntimeError('left over')\n"
    result = grade_path(write(tmp_path, cells))
    assert result.score == result.max_score
    [warning] = result.warnings
    assert warning.startswith(f"cell {len(cells)} raised RuntimeError: left over (line ")
    assert warning.endswith(": `raise RuntimeError('left over')`); the lines after it in this cell did not run")


def test_a_py_file_is_one_cell(tmp_path):
    path = tmp_path / "answer.py"
    path.write_text("# question: routing_trap\n" + solution_source("routing_trap") + "\nundefined_name\n")
    result = grade_path(path)
    assert result.score == result.max_score
    assert len(result.warnings) == 1 and result.warnings[0].startswith("your code raised NameError")


def test_a_call_that_fails_says_which_cell(tmp_path):
    cells = solution_cells()
    cells.append(code("import numpy as np\n\n\ndef avgpool2d_forward(x, kernel_size, stride):\n"
                      "    return x[:, :, ::stride, ::stride].reshape(-1, 7)"))
    result = grade_path(write(tmp_path, cells))
    failed = [t for t in result.tests if not t.passed]
    assert failed and f"(cell {len(cells)}, line 5: `return x[:, :, ::stride" in failed[0].feedback


def test_a_cell_that_hangs_stops_the_load_and_is_named(tmp_path):
    from backprop_traps.grader.sandbox.limits import Limits
    cells = solution_cells() + [code("while True:\n    pass")]
    result = grade_path(write(tmp_path, cells), limits=Limits(call_seconds=2, load_seconds=2, total_seconds=10))
    assert result.score == 0
    assert f"loading your code did not finish within 2 s (cell {len(cells)} was still running" in result.tests[0].feedback


STASHES_X = '''
_cache = {}


def maxpool2d_forward(x, kernel_size, stride):
    _cache["x"] = x  # CS231n style: keep the input for the backward
    return _solution_forward(x, kernel_size, stride)


def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    x = _cache["x"]  # the input of the LAST forward call, whatever dout belongs to
    n_, c_, h, w = x.shape
    dx = np.zeros_like(x)
    for n in range(n_):
        for c in range(c_):
            for i in range((h - kernel_size) // stride + 1):
                for j in range((w - kernel_size) // stride + 1):
                    window = x[n, c, i * stride:i * stride + kernel_size, j * stride:j * stride + kernel_size]
                    a, b = np.unravel_index(np.argmax(window), window.shape)
                    dx[n, c, i * stride + a, j * stride + b] += dout[n, c, i, j]
    return dx
'''


def test_state_left_by_an_earlier_call_is_named(tmp_path):
    path = tmp_path / "stash.py"
    path.write_text("# question: routing_trap\n" + solution_source("routing_trap")
                    + "\n_solution_forward = maxpool2d_forward\n" + STASHES_X)
    result = grade_path(path)
    raised = [t for t in result.tests if not t.passed and " raised " in t.feedback]
    assert raised, render(result, False)
    assert all("It reads `_cache`, which your functions changed when the grader called them" in t.feedback
               for t in raised), [t.feedback for t in raised]


def test_a_global_the_notebook_itself_set_is_not_blamed(tmp_path):
    path = tmp_path / "constant.py"
    path.write_text("# question: routing_trap\n" + solution_source("routing_trap") + '''
SCALE = {"k": 1.0}


def avgpool2d_forward(x, kernel_size, stride):
    return x.reshape(SCALE["missing"])
''')
    result = grade_path(path)
    failed = [t for t in result.tests if not t.passed]
    assert failed and all("It reads" not in t.feedback for t in failed)
