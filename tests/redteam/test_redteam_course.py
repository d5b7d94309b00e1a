"""Issue 23, classes 5 and 6, attacked as a student would: forging an nbgrader score from the
learner's own cells, and feeding a batch files that are not what they seem. Each in the
default mode and without bubblewrap (Landlock, seccomp, rlimits)."""
import os
import shutil
from pathlib import Path

import nbformat
import pytest

from backprop_traps.grader.batch.layouts import find_jobs
from backprop_traps.grader.batch.plan import Batch
from backprop_traps.grader.batch.store import ResultStore
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.loading.questions import solution_notebooks
from redteam_kit import mode  # noqa: F401 (fixture)

ATTACKS = Path(__file__).parent / "attacks"
SECRET = "redteam-course-secret"


@pytest.mark.filterwarnings("ignore:Object of type")
@pytest.mark.parametrize("sandbox", ["default", "no_bwrap"])
def test_nbgrader_score_cannot_be_forged_from_the_learners_cells(tmp_path, mode, sandbox):
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config
    from backprop_traps.grader.authoring.nbgrader_cell import GRADE_ID
    from backprop_traps.grader.batch.nbgrader_course import configure
    from backprop_traps.grader.batch.variants import student_seed

    mode(sandbox)
    course = tmp_path / "course"
    (course / "source" / "ps1").mkdir(parents=True)
    solution = solution_notebooks()["routing_trap"]
    shutil.copy(solution, course / "source" / "ps1")
    (course / "secret.txt").write_text(SECRET)
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "redteam"
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    configure(config, secret_file=str(course / "secret.txt"))
    api = NbGraderAPI(config=config)
    assert api.generate_assignment("ps1", force=True)["success"]
    stub = nbformat.read(str(course / "release" / "ps1" / solution.name), as_version=4)
    attack = (ATTACKS / "nbgrader_forge_score.py").read_text().replace(
        "__SECRET_PATH__", str(course / "secret.txt")).replace("__SOLUTION_PATH__", str(solution))
    at = next(i for i, c in enumerate(stub.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == GRADE_ID)
    stub.cells.insert(at, nbformat.v4.new_code_cell(attack))
    folder = course / "submitted" / "mallory" / "ps1"
    folder.mkdir(parents=True)
    nbformat.write(stub, str(folder / solution.name))
    assert api.autograde("ps1", "mallory", force=True)["success"]
    with Gradebook(config.CourseDirectory.db_url) as gradebook:
        recorded = gradebook.find_submission_notebook(solution.stem, "ps1", "mallory").score
    seed = student_seed(SECRET, "mallory", 1234, assignment="ps1", question="routing_trap")
    expected = grade_path(folder / solution.name, seed=seed)
    assert recorded == expected.score == 0.0
    assert SECRET not in (course / "autograded" / "mallory" / "ps1" / solution.name).read_text()


@pytest.mark.parametrize("sandbox", ["default", "no_bwrap"])
def test_a_batch_never_reads_through_a_link_or_a_fifo(tmp_path, mode, sandbox):
    """A student folder that links to the kit's solutions, a submission that links to one, a
    FIFO named like a notebook: each is that submission's error, nothing is read or graded."""
    mode(sandbox)
    base = tmp_path / "class"
    (base / "amy").mkdir(parents=True)
    (base / "amy" / "01_routing_trap.ipynb").symlink_to(solution_notebooks()["routing_trap"])
    (base / "bob").symlink_to(solution_notebooks()["routing_trap"].parent)
    (base / "cal").mkdir()
    os.mkfifo(base / "cal" / "01_routing_trap.ipynb")
    for source in (str(base / "*" / "*.ipynb"), str(base)):
        jobs = find_jobs(source, list(solution_notebooks()))
        store = ResultStore(tmp_path / f"out-{len(source)}")
        assert Batch(jobs, store).pending() == []
        for job in jobs:
            result = store.load(job)[0]
            assert result["score"] == 0.0 and result["error"], job.rel
