"""kernels/runtime/solutions.py reads the solution notebooks as the grader does (issue 48: the
kernels import nothing from the grader, so they read their references themselves): the same
notebook for every question, the same code text, for the kit's folder, for an instructor's
(BACKPROP_TRAPS_QUESTIONS), and for generated notebooks with every kind of cell."""
import json
import shutil

import pytest
from hypothesis import given, settings, strategies as st

from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
from backprop_traps.grader.loading.questions import solution_notebooks, solution_path
from backprop_traps.grader.loading.reference import load_solution
from backprop_traps.kernels.runtime import solutions


def test_every_question_reads_the_same_notebook_and_the_same_code():
    notebooks = solution_notebooks()
    assert len(notebooks) >= 30
    for question, path in notebooks.items():
        assert solutions.notebook_path(question) == path, question
        assert solutions.reference_code(path) == graded_code(parse_notebook(path.read_text(encoding="utf-8"))), question


def test_the_namespace_holds_the_graders_functions():
    mine, graders = solutions.load_solution("routing_trap"), load_solution("routing_trap")
    assert sorted(vars(mine)) == sorted(vars(graders))
    assert mine is solutions.load_solution("routing_trap")  # read once a process


def test_an_instructors_folder_is_read_as_the_grader_reads_it(tmp_path, monkeypatch):
    (tmp_path / "solutions").mkdir()
    source = solution_path("straight_through")
    copy = tmp_path / "solutions" / "07_straight_through.ipynb"
    shutil.copy(source, copy)
    monkeypatch.setenv(solutions.ENV_VAR, str(tmp_path))
    assert solutions.notebook_path("straight_through") == solution_path("straight_through") == copy
    assert solutions.reference_code(copy) == graded_code(parse_notebook(copy.read_text(encoding="utf-8")))
    with pytest.raises(KeyError):
        solutions.notebook_path("routing_trap")  # only the instructor's folder counts, as for `grade`


def test_no_solutions_folder_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv(solutions.ENV_VAR, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no solutions/ folder"):
        solutions.notebook_path("routing_trap")


LINES = st.sampled_from(["x = 1", "  y = x", "%load_ext autoreload", "!pip install numpy", "x = !ls",
                         "%%time", "%%bash", "def f(a):", "    return a", "", "# a comment"])
CELLS = st.fixed_dictionaries({
    "cell_type": st.sampled_from(["code", "markdown", "raw"]),
    "metadata": st.fixed_dictionaries({}, optional={
        "tags": st.lists(st.sampled_from(["demo", "setup", "plot"]), max_size=2),
        "nbgrader": st.fixed_dictionaries({}, optional={"grade": st.booleans(), "solution": st.booleans()})}),
    "source": st.one_of(st.lists(LINES.map(lambda s: s + "\n"), max_size=5),
                        st.lists(LINES, max_size=5).map("\n".join)),
})


@settings(max_examples=150, deadline=None)
@given(st.lists(CELLS, max_size=8))
def test_generated_notebooks_give_the_graders_text(tmp_path_factory, cells):
    path = tmp_path_factory.mktemp("nb") / "01_generated.ipynb"
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    path.write_text(text, encoding="utf-8")
    assert solutions.reference_code(path) == graded_code(parse_notebook(text))
