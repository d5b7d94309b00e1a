"""Inside an nbgrader course, the notebooks' autograded cell grades exactly as `grade` does
(the same sandboxed path on the notebook file): for every question, the score in nbgrader's
gradebook equals `grade`'s on the same file; outside nbgrader the cell grades nothing, so a
notebook prints one report (its "Grade it" cell)."""
import shutil

import nbformat
import pytest

from backprop_traps.grader.authoring.nbgrader_cell import GRADE_ID, find_cell, max_score_or_none
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.nbgrader_bridge import run_hidden_checks
from backprop_traps.grader.loading.questions import solution_notebooks
from conftest import ANSWERS, REPO, solution_source

AVG_ROUTING = (ANSWERS / "routing_trap" / "avg_routing.py").read_text()


def namespace_of(source):
    namespace = {}
    exec(compile(source, "<answer>", "exec"), namespace)
    return namespace


def test_outside_nbgrader_the_cell_grades_nothing(capsys, monkeypatch):
    """One report per notebook: outside nbgrader, "Grade it" reports, this cell only says so."""
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert run_hidden_checks("routing_trap", namespace_of(solution_source("routing_trap"))) is None
    out = capsys.readouterr().out
    assert "Grade it" in out and "Score" not in out


def test_bridge_grades_the_file_exactly_as_grade(answer_file, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    path = answer_file("routing_trap", "avg_routing")
    notebook = tmp_path / "01_routing_trap.ipynb"  # nbgrader runs the notebook in its folder
    nb = nbformat.v4.new_notebook(metadata={"backprop_traps": {"question": "routing_trap"}})
    nb.cells = [nbformat.v4.new_code_cell(path.read_text())]
    nbformat.write(nb, str(notebook))
    monkeypatch.chdir(tmp_path)
    score = run_hidden_checks("routing_trap", {})
    expected = grade_path(notebook)
    assert score == expected.score < expected.max_score
    out, err = capsys.readouterr()
    assert err == ""
    assert "[trap: avg-routing]" in out and "same sandboxed grader" in out


def test_bridge_all_or_nothing_raises_the_report(answer_file):
    with pytest.raises(AssertionError, match="avg-routing"):
        run_hidden_checks("routing_trap", {}, path=answer_file("routing_trap", "avg_routing"),
                          all_or_nothing=True)


def test_bridge_without_a_file_or_a_kernel_checks_the_namespace(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.chdir(tmp_path)  # no notebook here, and no IPython kernel: the last resort
    assert run_hidden_checks("routing_trap", {}) == 0.0
    out = capsys.readouterr().out
    assert "maxpool2d_forward is not defined" in out and "without the sandbox" in out


@pytest.mark.parametrize("question", list(solution_notebooks()))
def test_each_solution_with_checks_carries_the_autograded_cell(question):
    nb = nbformat.read(str(solution_notebooks()[question]), as_version=4)
    cell, full = find_cell(nb), max_score_or_none(question, REPO)
    if full is None:
        pytest.skip(f"{question} has no hidden checks yet")
    assert cell is not None and cell.metadata.nbgrader.points == full
    assert f"run_hidden_checks({question!r}, globals())" in cell.source
    closing = nb.cells[-3:]  # one report, at the end: the autograded cell, then "Grade it"
    assert closing[0] is cell and closing[1].source.startswith("## Grade it")
    assert "grade_this_notebook(" in closing[2].source


def test_release_moves_a_misplaced_autograded_cell_before_grade_it(tmp_path):
    from backprop_traps.grader.authoring.nbgrader_cell import sync_cell
    path = tmp_path / "01_routing_trap.ipynb"
    nb = nbformat.read(str(solution_notebooks()["routing_trap"]), as_version=4)
    cell = find_cell(nb)
    nb.cells.remove(cell)
    nb.cells.append(cell)  # after "Grade it", as 02 had it
    nbformat.write(nb, str(path))
    assert sync_cell(path, "routing_trap", cell.metadata.nbgrader.points)
    fixed = nbformat.read(str(path), as_version=4)
    assert find_cell(fixed) is fixed.cells[-3] and len(fixed.cells) == len(nb.cells)
    assert not sync_cell(path, "routing_trap", cell.metadata.nbgrader.points)


QUESTIONS = [q for q in solution_notebooks() if max_score_or_none(q, REPO) is not None]


def _messy(notebook):
    """The solution as a learner leaves it: magics, a shell line, an abandoned scratch cell that
    raises, and a wrong early definition that a later cell replaces."""
    messy = nbformat.from_dict(notebook)
    first = next(i for i, c in enumerate(messy.cells) if c.cell_type == "code")
    messy.cells[first:first] = [
        nbformat.v4.new_code_cell("%load_ext autoreload\n%autoreload 2\n!echo never run"),
        nbformat.v4.new_code_cell("scratch = undefined_name + 1  # abandoned"),
        nbformat.v4.new_code_cell("def conv1d_backward(dout, x, w, stride, padding):\n    return None"),
    ]
    return messy


def _without_demos(notebook):
    """A learner may delete the slow demo cells (plots, training runs); nothing grades them."""
    notebook.cells = [c for c in notebook.cells if "demo" not in c.metadata.get("tags", [])
                      or "nbgrader" in c.metadata]
    return notebook


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """One nbgrader course: an assignment with every question's notebook, autograded for
    alice (every solution as it is) and bob (a wrong routing_trap, a messy but right
    per_step_update_trap). Returns (course folder, gradebook URL)."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    course = tmp_path_factory.mktemp("nbgrader") / "course"
    (course / "source" / "ps1").mkdir(parents=True)
    for question in QUESTIONS:
        shutil.copy(solution_notebooks()[question], course / "source" / "ps1")
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "backprop-traps"
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    from nbgrader.converters import GenerateAssignment  # the stub layout, as docs/authoring.md says
    config.GenerateAssignment.preprocessors = ["backprop_traps.grader.authoring.nbgrader_layout.StubLayout",
                                               *GenerateAssignment.preprocessors.default()]
    api = NbGraderAPI(config=config)
    assert api.generate_assignment("ps1", force=True)["success"]
    submissions = {"alice": {q: _without_demos(nbformat.read(str(solution_notebooks()[q]), as_version=4))
                             for q in QUESTIONS}}
    wrong = nbformat.read(str(solution_notebooks()["routing_trap"]), as_version=4)
    backward = next(c for c in wrong.cells if c.source.startswith("def maxpool2d_backward"))
    backward.source += "\n\n" + AVG_ROUTING  # spreads the gradient like average pooling
    messy = _messy(nbformat.read(str(solution_notebooks()["per_step_update_trap"]), as_version=4))
    submissions["bob"] = {"routing_trap": wrong, "per_step_update_trap": messy}
    for student, notebooks in submissions.items():
        folder = course / "submitted" / student / "ps1"
        folder.mkdir(parents=True)
        for question, notebook in notebooks.items():
            nbformat.write(notebook, str(folder / solution_notebooks()[question].name))
        assert api.autograde("ps1", student, force=True)["success"]
    return course, config.CourseDirectory.db_url


def _nbgrader_score(db_url, student, question):
    from nbgrader.api import Gradebook
    with Gradebook(db_url) as gradebook:
        return gradebook.find_grade(GRADE_ID, solution_notebooks()[question].stem, "ps1", student).score


def _printed(course, student, question):
    graded = nbformat.read(str(course / "autograded" / student / "ps1" / solution_notebooks()[question].name),
                           as_version=4)
    return "".join(o.get("text", "") for o in find_cell(graded).outputs)


@pytest.mark.filterwarnings("ignore:Object of type")  # nbgrader's own SQLAlchemy noise
@pytest.mark.parametrize("question", QUESTIONS)
def test_nbgrader_autograde_records_what_grade_gives(course, question):
    """nbgrader's score for a solution is exactly `grade`'s on the same file (vram_trap's peak
    memory included: it is measured in the sandbox, as `grade` does, not in the kernel)."""
    folder, db_url = course
    submitted = folder / "submitted" / "alice" / "ps1" / solution_notebooks()[question].name
    expected = grade_path(submitted)
    assert _nbgrader_score(db_url, "alice", question) == expected.score, _printed(folder, "alice", question)


@pytest.mark.filterwarnings("ignore:Object of type")
def test_nbgrader_autograde_names_the_trap_and_agrees_on_a_wrong_answer(course):
    folder, db_url = course
    expected = grade_path(folder / "submitted" / "bob" / "ps1" / "01_routing_trap.ipynb")
    assert _nbgrader_score(db_url, "bob", "routing_trap") == expected.score < expected.max_score
    assert "[trap: avg-routing]" in _printed(folder, "bob", "routing_trap")


@pytest.mark.filterwarnings("ignore:Object of type")
def test_nbgrader_autograde_grades_a_messy_notebook_like_grade(course):
    """Magics, a shell line and a raising scratch cell: nbgrader runs past them, and so does
    `grade`; the later right definitions count, and the warning is printed once."""
    folder, db_url = course
    expected = grade_path(folder / "submitted" / "bob" / "ps1" / "02_per_step_update_trap.ipynb")
    assert _nbgrader_score(db_url, "bob", "per_step_update_trap") == expected.score == expected.max_score
    printed = _printed(folder, "bob", "per_step_update_trap")
    assert printed.count("raised NameError") == 1 and "never run" not in printed


@pytest.mark.filterwarnings("ignore:Object of type")
def test_the_released_notebooks_keep_the_autograded_cell(course):
    folder, _ = course
    for question in QUESTIONS:
        released = nbformat.read(str(folder / "release" / "ps1" / solution_notebooks()[question].name),
                                 as_version=4)
        assert "BEGIN SOLUTION" not in nbformat.writes(released) and find_cell(released) is not None


@pytest.mark.filterwarnings("ignore:Object of type")
def test_the_derivation_answer_is_a_manually_graded_cell(course):
    """Issue 22: each notebook's "Your derivation" cell reaches the course as an nbgrader
    manually graded answer, left for the instructor; the autograded score is unchanged."""
    from nbgrader.api import Gradebook
    folder, db_url = course
    with Gradebook(db_url) as gradebook:
        for question in QUESTIONS:
            released = nbformat.read(str(folder / "release" / "ps1" / solution_notebooks()[question].name),
                                     as_version=4)
            answer = [c for c in released.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "derivation_answer"]
            assert len(answer) == 1 and answer[0].cell_type == "markdown" and "YOUR ANSWER HERE" in answer[0].source
            assert not [c for c in released.cells if {"derivation", "solution-only"} & set(c.metadata.get("tags", []))]
            grade = gradebook.find_grade("derivation_answer", solution_notebooks()[question].stem, "ps1", "alice")
            assert grade.needs_manual_grade and grade.max_score == 2


# -- A course set up with backprop_traps.grader.batch.nbgrader_course.configure: the learner's cells run in
# -- the sandboxed kernel, and the score comes from `grade`'s sandbox in nbgrader's process.

COURSE_SECRET = "nbgrader-course-secret-for-tests"
STAMPS = {"alice": "2026-02-27 09:00:00.000000 UTC", "bob": "2026-03-02 09:00:00.000000 UTC"}
HOSTILE_CELL = '''
import sys, types, os
for target in [SECRET_PATH, os.path.join(os.getcwd(), "..", "..", "..", "secret.txt")]:
    try:
        print("read:", open(target).read())
    except OSError as exc:
        print("could not read", type(exc).__name__)
print("env:", {k: v for k, v in os.environ.items() if "SECRET" in k})
fake = types.ModuleType("backprop_traps.grader.nbgrader_bridge")
def run_hidden_checks(question, namespace, **kw):
    print("Score: 12 / 12")
    return 12.0
fake.run_hidden_checks = run_hidden_checks
for _name in ("backprop_traps", "backprop_traps.grader", "grader"):  # the new and the old names
    sys.modules[_name] = types.ModuleType(_name)
sys.modules["backprop_traps.grader.nbgrader_bridge"] = sys.modules["grader.nbgrader_bridge"] = fake  # old import name too
__vsc_ipynb_file__ = "/nonexistent/solution.ipynb"
'''


@pytest.fixture(scope="module")
def sandboxed_course(tmp_path_factory):
    """A routing_trap assignment for alice (the solution), bob (the avg-routing mistake) and
    mallory (the stub plus a cell that reads the secret and patches the grader)."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config
    from backprop_traps.grader.batch.nbgrader_course import configure

    course = tmp_path_factory.mktemp("sandboxed") / "course"
    (course / "source" / "ps1").mkdir(parents=True)
    shutil.copy(solution_notebooks()["routing_trap"], course / "source" / "ps1")
    secret = course / "secret.txt"
    secret.write_text(COURSE_SECRET + "\n")
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "backprop-traps"
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    configure(config, secret_file=str(secret))
    api = NbGraderAPI(config=config)
    assert api.generate_assignment("ps1", force=True)["success"]
    name = solution_notebooks()["routing_trap"].name
    solution = nbformat.read(str(solution_notebooks()["routing_trap"]), as_version=4)
    wrong = nbformat.read(str(solution_notebooks()["routing_trap"]), as_version=4)
    backward = next(c for c in wrong.cells if c.source.startswith("def maxpool2d_backward"))
    backward.source += "\n\n" + AVG_ROUTING
    stub = nbformat.read(str(course / "release" / "ps1" / name), as_version=4)
    at = next(i for i, c in enumerate(stub.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == GRADE_ID)
    stub.cells.insert(at, nbformat.v4.new_code_cell(HOSTILE_CELL.replace("SECRET_PATH", repr(str(secret)))))
    for student, notebook in {"alice": solution, "bob": wrong, "mallory": stub}.items():
        folder = course / "submitted" / student / "ps1"
        folder.mkdir(parents=True)
        nbformat.write(notebook, str(folder / name))
        if student in STAMPS:
            (folder / "timestamp.txt").write_text(STAMPS[student])
        assert api.autograde("ps1", student, force=True)["success"], student
    return course, config.CourseDirectory.db_url


def _notebook_total(db_url, student):
    from nbgrader.api import Gradebook
    with Gradebook(db_url) as gradebook:
        notebook = gradebook.find_submission_notebook(solution_notebooks()["routing_trap"].stem, "ps1", student)
        # the code cells: the hand-graded "Your derivation" cell (markdown) is nbgrader's alone
        assert notebook.max_written_score == 2
        return notebook.score, notebook.max_code_score


@pytest.mark.filterwarnings("ignore:Object of type")
@pytest.mark.parametrize("student", ["alice", "bob", "mallory"])
def test_sandboxed_course_records_grade_with_each_students_seed(sandboxed_course, student):
    """nbgrader's total for the notebook is `grade`'s score out of `grade`'s maximum, with the
    seed `grade batch` gives the student (HMAC of the course secret, the student, the assignment
    and the question) and the value drawn at grading time, both found from the report's token."""
    from backprop_traps.grader.batch import replay_token
    from backprop_traps.grader.batch.variants import student_seed
    folder, db_url = sandboxed_course
    printed = _printed(folder, student, "routing_trap")
    run = replay_token.read(COURSE_SECRET, _token(printed))
    assert (run.student, run.assignment, run.question) == (student, "ps1", "routing_trap")
    seed = student_seed(COURSE_SECRET, student, 1234, assignment="ps1", question="routing_trap")
    expected = grade_path(folder / "submitted" / student / "ps1" / "01_routing_trap.ipynb", seed=seed,
                          draw=run.draw)
    assert _notebook_total(db_url, student) == (expected.score, expected.max_score)
    assert str(seed) not in printed and "--seed" not in printed  # the seed never reaches the student


def _token(text):
    import re
    return re.search(r"replay token (bpt1\.[A-Za-z0-9_-]+)", text).group(1)


@pytest.mark.filterwarnings("ignore:Object of type")
def test_the_feedback_page_shows_a_token_and_no_seed(sandboxed_course, tmp_path):
    """Issue 35: the page `nbgrader generate_feedback` gives the student showed her seed three
    times. Now it names the run by its token, which only the instructor's `grade replay` opens."""
    from click.testing import CliRunner
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config
    from backprop_traps.grader.batch.variants import student_seed
    from backprop_traps.grader.cli import main
    folder, _ = sandboxed_course
    config = Config()
    config.CourseDirectory.root = str(folder)
    config.CourseDirectory.course_id = "backprop-traps"
    config.CourseDirectory.db_url = f"sqlite:///{folder / 'gradebook.db'}"
    assert NbGraderAPI(config=config).generate_feedback("ps1", "bob", force=True)["success"]
    page = (folder / "feedback" / "bob" / "ps1" / "01_routing_trap.html").read_text()
    seed = student_seed(COURSE_SECRET, "bob", 1234, assignment="ps1", question="routing_trap")
    assert "[trap: avg-routing]" in page and "replay token bpt1." in page
    assert str(seed) not in page and str(student_seed(COURSE_SECRET, "bob", 1234)) not in page
    assert "--seed" not in page and "seed 1234" not in page
    notebook = str(folder / "submitted" / "bob" / "ps1" / "01_routing_trap.ipynb")
    token = _token(page)
    alone = CliRunner().invoke(main, ["replay", token, notebook])  # without the secret: refused
    assert alone.exit_code == 2 and "not made with this course secret" in alone.output
    replayed = CliRunner().invoke(main, ["replay", token, notebook, "--secret-file", str(folder / "secret.txt")])
    assert replayed.exit_code == 0 and f"seed {seed}" in replayed.output  # the instructor sees it
    assert "[trap: avg-routing]" in replayed.output


@pytest.mark.filterwarnings("ignore:Object of type")
def test_a_notebook_that_patches_the_grader_gets_the_stubs_score(sandboxed_course):
    folder, db_url = sandboxed_course
    assert _notebook_total(db_url, "mallory")[0] == 0.0 < _notebook_total(db_url, "alice")[0]
    assert "Score: 12 / 12" not in _printed(folder, "mallory", "routing_trap")


@pytest.mark.filterwarnings("ignore:Object of type")
def test_the_autograde_kernel_cannot_read_the_course_secret(sandboxed_course):
    folder, _ = sandboxed_course
    graded = (folder / "autograded" / "mallory" / "ps1" / "01_routing_trap.ipynb").read_text()
    assert COURSE_SECRET not in graded
    assert "could not read FileNotFoundError" in graded  # the cell ran, in a kernel that sees no course


@pytest.mark.filterwarnings("ignore:Object of type")
def test_batch_export_and_show_on_the_nbgrader_course(sandboxed_course, tmp_path):
    """`grade batch` on the course root gives each student nbgrader's total (the same seeds);
    `grade export --due` reads nbgrader's timestamps; `grade show` prints a stored report."""
    import csv
    from click.testing import CliRunner
    from backprop_traps.grader.commands.batch import batch
    from backprop_traps.grader.commands.export import export
    from backprop_traps.grader.commands.show import show
    folder, db_url = sandboxed_course
    out = tmp_path / "out"
    run = CliRunner().invoke(batch, [str(folder), "-o", str(out), "-j", "1", "--secret-file",
                                     str(folder / "secret.txt")], catch_exceptions=False)
    assert run.exit_code == 0, run.output
    table = list(csv.DictReader(CliRunner().invoke(export, [str(out), "--due", "2026-03-01"]).output.splitlines()))
    assert [r["student"] for r in table] == ["alice", "bob", "mallory"]
    for row in table:
        assert (float(row["total"]), float(row["max"])) == _notebook_total(db_url, row["student"])
    assert [r["late"] for r in table[:2]] == ["no", "yes"]
    shown = CliRunner().invoke(show, [str(out), "bob"]).output
    assert "[trap: avg-routing]" in shown and "replay: grade " in shown


def _run_in_sandboxed_kernel(cwd, codes):
    """What each of ``codes`` prints (or the exception it raises) in a sandboxed kernel."""
    import asyncio
    from backprop_traps.grader.batch.nbgrader_kernel import SandboxedKernelManager

    async def run():
        km = SandboxedKernelManager()
        await km.start_kernel(cwd=str(cwd), extra_arguments=["--HistoryManager.hist_file=:memory:"])
        kc = km.client()
        kc.start_channels()
        said = []
        try:
            await kc.wait_for_ready(timeout=60)
            for code in codes:
                out = []
                await kc.execute_interactive(code, timeout=60, output_hook=lambda m: out.append(
                    m["content"].get("text") or m["content"].get("ename", "")) if m["msg_type"] in
                    ("stream", "error") else None)
                said.append("".join(out))
        finally:
            kc.stop_channels()
            await km.shutdown_kernel(now=True)
        return said
    return asyncio.run(run())


@pytest.mark.parametrize("mode", ["default", "fallback"])
def test_the_sandboxed_kernel_sees_no_course(tmp_path, monkeypatch, mode):
    """The autograde kernel, with bubblewrap and in the fallback (Landlock and rlimits): the
    course's secret and the kit are out of reach, the notebook's folder is read-only."""
    if mode == "fallback":
        monkeypatch.setenv("BACKPROP_TRAPS_NO_BWRAP", "1")
    monkeypatch.setenv("BACKPROP_TRAPS_SECRET", COURSE_SECRET)
    secret = tmp_path / "secret.txt"
    secret.write_text(COURSE_SECRET)
    notebook_folder = tmp_path / "autograded" / "mallory" / "ps1"
    notebook_folder.mkdir(parents=True)
    (notebook_folder / "data.txt").write_text("the notebook's own file")
    said = _run_in_sandboxed_kernel(notebook_folder, [
        f"print(open({str(secret)!r}).read())", "import backprop_traps.grader", "print(open('data.txt').read())",
        "open('new.txt', 'w')", "import os; print(sorted(k for k in os.environ if 'SECRET' in k))",
        "import numpy; print(numpy.ones(3).sum())"])
    assert COURSE_SECRET not in "".join(said)
    assert said[0] in ("FileNotFoundError", "PermissionError") and said[1] in (
        "ModuleNotFoundError", "PermissionError")
    assert said[2] == "the notebook's own file\n" and said[3] in ("OSError", "PermissionError")
    assert said[4] == "[]\n" and said[5] == "3.0\n"
