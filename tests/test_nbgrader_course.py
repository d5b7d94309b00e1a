"""Inside an nbgrader course, the notebooks' autograded cell grades with the kit's hidden
checks: same score and feedback as `grade`, read back from nbgrader's gradebook."""
import shutil

import nbformat
import pytest

from grader.authoring.nbgrader_cell import GRADE_ID, find_cell
from grader.engine import grade_path
from grader.nbgrader_bridge import run_hidden_checks
from grader.questions import solution_notebooks
from conftest import ANSWERS, REPO, solution_source

AVG_ROUTING = (ANSWERS / "routing_trap" / "avg_routing.py").read_text()


def namespace_of(source):
    namespace = {}
    exec(compile(source, "<answer>", "exec"), namespace)
    return namespace


def test_bridge_gives_grades_score_and_keeps_stderr_clean(answer_file, capsys):
    path = answer_file("routing_trap", "avg_routing")
    score = run_hidden_checks("routing_trap", namespace_of(path.read_text()))
    expected = grade_path(path)
    assert score == expected.score < expected.max_score
    out, err = capsys.readouterr()
    assert err == ""
    assert "[trap: avg-routing]" in out and "without the sandbox" in out


def test_bridge_all_or_nothing_raises_the_report():
    with pytest.raises(AssertionError, match="avg-routing"):
        run_hidden_checks("routing_trap", namespace_of(solution_source("routing_trap") + AVG_ROUTING),
                          all_or_nothing=True)


def test_bridge_reports_what_the_learner_did_not_write(capsys):
    assert run_hidden_checks("routing_trap", {}) == 0.0
    assert "maxpool2d_forward is not defined" in capsys.readouterr().out


@pytest.mark.parametrize("question", list(solution_notebooks()))
def test_each_solution_with_checks_carries_the_autograded_cell(question):
    from grader.authoring.nbgrader_cell import max_score_or_none
    nb = nbformat.read(str(solution_notebooks()[question]), as_version=4)
    cell, full = find_cell(nb), max_score_or_none(question, REPO)
    if full is None:
        pytest.skip(f"{question} has no hidden checks yet")
    assert cell is not None and cell.metadata.nbgrader.points == full
    assert f"run_hidden_checks({question!r}, globals())" in cell.source


def _submit(course, student, notebook):
    folder = course / "submitted" / student / "ps1"
    folder.mkdir(parents=True)
    nbformat.write(notebook, str(folder / "01_routing_trap.ipynb"))
    return folder / "01_routing_trap.ipynb"


@pytest.mark.filterwarnings("ignore:Object of type")  # nbgrader's own SQLAlchemy noise
def test_an_nbgrader_course_grades_with_the_hidden_checks(tmp_path):
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    course = tmp_path / "course"
    (course / "source" / "ps1").mkdir(parents=True)
    source = shutil.copy(REPO / "solutions" / "01_routing_trap.ipynb", course / "source" / "ps1")
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "backprop-traps"
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    api = NbGraderAPI(config=config)
    assert api.generate_assignment("ps1", force=True)["success"]
    released = nbformat.read(str(course / "release" / "ps1" / "01_routing_trap.ipynb"), as_version=4)
    assert "BEGIN SOLUTION" not in nbformat.writes(released) and find_cell(released) is not None

    right = nbformat.read(str(source), as_version=4)  # the solutions filled in
    wrong = nbformat.read(str(source), as_version=4)
    backward = next(c for c in wrong.cells if c.source.startswith("def maxpool2d_backward"))
    backward.source += "\n\n" + AVG_ROUTING  # spreads the gradient like average pooling
    _submit(course, "alice", right)
    wrong_path = _submit(course, "bob", wrong)
    for student in ("alice", "bob"):
        assert api.autograde("ps1", student, force=True)["success"]

    with Gradebook(config.CourseDirectory.db_url) as gradebook:
        def hidden(student):
            return gradebook.find_grade(GRADE_ID, "01_routing_trap", "ps1", student).score
        full = grade_path(source)
        assert hidden("alice") == full.score == full.max_score
        assert gradebook.find_submission("ps1", "alice").score == gradebook.find_submission("ps1", "alice").max_score
        expected = grade_path(wrong_path, question="routing_trap")
        assert hidden("bob") == expected.score < full.max_score
    graded = nbformat.read(str(course / "autograded" / "bob" / "ps1" / "01_routing_trap.ipynb"), as_version=4)
    printed = "".join(o.get("text", "") for o in find_cell(graded).outputs)
    assert "[trap: avg-routing]" in printed
