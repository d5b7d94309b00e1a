"""Issue 51, item 1: what a notebook's kernel ran *last* for each cell, told from the saved file.

The cells run here through IPython's own compiler (``CachingCompiler.cache``: the cell's text in
``linecache`` under a name of its own, as every IPython kernel runs a cell), so the live
functions point at the text that defined them, exactly as in JupyterLab.
"""
import functools

from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.core.compilerop import CachingCompiler

from backprop_traps.grader.notebook_grade import stale_sentence
from backprop_traps.grader.notebook_kernel import defined_names, edited_cells

SAVED_FORWARD = "def forward(x):\n    return x\n"
SAVED_BACKWARD = "def backward(d):\n    return d\n"
TRAP_BACKWARD = "def backward(d):\n    return 2 * d\n"


class Shell:
    """The parts of an IPython shell the check reads: its namespace, compiler, transform."""

    def __init__(self):
        self.user_ns, self.compile, self.count = {}, CachingCompiler(), 0

    def run(self, source: str) -> None:
        self.count += 1
        name = self.compile.cache(source, self.count, raw_code=source)
        exec(compile(source, name, "exec"), self.user_ns)  # noqa: S102 (test code)

    def transform_cell(self, source: str) -> str:
        return source


def test_an_edit_run_after_the_saved_text_is_seen():
    shell = Shell()
    for cell in (SAVED_FORWARD, SAVED_BACKWARD):  # Run All of the saved file: full marks
        shell.run(cell)
    saved = [SAVED_FORWARD, SAVED_BACKWARD]
    assert edited_cells([c.strip() for c in saved], saved, shell) == []
    shell.run(TRAP_BACKWARD)  # edited into the trap, run, not saved
    found = edited_cells([c.strip() for c in saved], saved, shell)
    assert [(f.source, f.names, f.run) for f in found] == [(SAVED_BACKWARD.strip(), ["backward"], 3)]
    shell.run(SAVED_BACKWARD)  # reverted and run again: what ran is the saved file
    assert edited_cells([c.strip() for c in saved], saved, shell) == []


def test_a_definition_moved_to_another_saved_cell_is_not_an_edit():
    shell = Shell()
    helper = "def helper():\n    return 1\n"
    moved = "def helper():\n    return 1\n\ndef other():\n    return helper()\n"
    shell.run(helper)
    shell.run(moved)
    assert edited_cells([helper.strip(), moved.strip()], [helper, moved], shell) == []


def test_lambdas_decorated_functions_and_classes_count_too():
    shell = Shell()
    shell.user_ns["functools"] = functools
    saved = ["g = lambda d: d", "def wrap(f):\n    @functools.wraps(f)\n    def w(*a):\n        return f(*a)\n"
             "    return w\n\n@wrap\ndef h(d):\n    return d", "class Layer:\n    def backward(self, d):\n        return d"]
    for cell in saved:
        shell.run(cell)
    edits = ["g = lambda d: -d", saved[1].replace("return d", "return -d"), saved[2].replace("return d", "return -d")]
    for cell in edits:
        shell.run(cell)
    found = edited_cells(saved, saved, shell)
    assert [f.names for f in found] == [["g"], ["wrap", "h"], ["Layer"]]


def test_cells_that_are_not_python_or_define_nothing_live_are_left_to_their_text():
    shell = Shell()
    shell.run("x = 3")
    assert defined_names("def f(:\n  pass") == [] and edited_cells(["def f(:", "x = 3"], ["x = 4"], shell) == []
    shell.user_ns["imported"] = functools.reduce  # an import: not defined by a cell
    assert edited_cells(["imported = 1"], ["imported = 1"], shell) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["forward", "backward", "helper"]), st.integers(0, 2)), min_size=1,
                max_size=8), st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)))
def test_an_edit_is_reported_exactly_when_the_last_run_of_a_name_is_not_saved(runs, saved_versions):
    """Cells run in any order, each name in one of three versions: a saved cell is reported
    exactly when the kernel's definition of its name came from a version that is not saved."""
    names = ["forward", "backward", "helper"]
    text = lambda name, version: f"def {name}(x):\n    return x + {version}"  # noqa: E731
    saved = [text(n, v) for n, v in zip(names, saved_versions)]
    shell, last = Shell(), {}
    for name, version in runs:
        shell.run(text(name, version))
        last[name] = version
    found = {f.names[0] for f in edited_cells(saved, saved, shell)}
    assert found == {n for n, v in zip(names, saved_versions) if n in last and last[n] != v}


def test_the_sentence_counts_cells_in_good_grammar():
    one = stale_sentence(["`backward` is this kernel's from an edited, unsaved version of its cell"], "nb.ipynb")
    two = stale_sentence(["a", "b"], "nb.ipynb")
    assert "1 of its code cells is not" in one and "`backward`" in one and "no score" in one
    assert "2 of its code cells are not" in two
