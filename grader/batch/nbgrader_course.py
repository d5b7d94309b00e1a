"""An nbgrader course whose scores come from `grade`, never from the learner's kernel.

Under ``nbgrader autograde`` the learner's cells run in a kernel before the hidden-checks
cell, so whatever that cell reads or calls there (its own import, ``sys.modules``, ``open``,
front-end hints) can be forged. The course's ``nbgrader_config.py`` therefore adds, with
nbgrader's documented extension points (its preprocessor lists)::

    from backprop_traps.grader.batch.nbgrader_course import configure
    configure(c, secret_file="/srv/course/secret")

which makes three changes:
- ``SandboxedExecute``: nbgrader's Execute step with the sandboxed kernel
  (``nbgrader_kernel``): the learner's cells cannot read the course, the secret or the
  gradebook;
- ``SandboxedScore``, after Execute and before ``SaveAutoGrades``, in nbgrader's own
  process: it grades the notebook's cells with `grade`'s sandboxed path, with the seed
  ``HMAC(course secret, [nbgrader's student id, assignment id, question])`` as `grade batch`
  gives and a value drawn at grading time (engine/draws.py), and replaces the hidden-checks
  cell's outputs with the report and the score: the report names the run by its replay token,
  never by the seed (the feedback page shows it to the student); whatever the kernel printed
  for that cell is dropped, and ``SaveAutoGrades`` records the score;
- ``VisibleTestsCarryNoPoints`` (at ``generate_assignment``): the visible test cells stay
  autograder tests (nbgrader still shows which pass) but are worth 0 points. They run in
  the learner's kernel, so a learner could forge them, and `grade` never counts them:
  nbgrader's total is then `grade`'s score, out of the question's full score.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

import nbformat
from nbformat import NotebookNode, v4
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Unicode

from backprop_traps.grader.authoring.nbgrader_cell import GRADE_ID
from backprop_traps.grader.batch.nbgrader_kernel import SandboxedKernelManager

_QUESTION_IN_CELL = re.compile(r"""run_hidden_checks\(\s*['"]([A-Za-z0-9_]+)['"]""")
SELF_GRADE_NOTE = "(nbgrader graded this notebook: the report is in the hidden-checks cell above.)\n"
NOTE = ("  (graded outside the notebook's kernel by `grade`'s sandbox; the instructor replays this run "
        "from its token: `grade replay TOKEN NOTEBOOK`)")


class SandboxedExecute(Execute):
    """nbgrader's Execute step, with every kernel started in the sandbox."""

    def __init__(self, *args, **kwargs):
        kwargs["kernel_manager_class"] = SandboxedKernelManager
        super().__init__(*args, **kwargs)


class SandboxedScore(NbGraderPreprocessor):
    """Grades the notebook with `grade`'s sandbox and writes the hidden-checks cell's result."""

    secret_file = Unicode("", help="File holding the course secret (seeds: HMAC(secret, student, assignment, question)); "
                                   "empty: BACKPROP_TRAPS_SECRET, else the default seed.").tag(config=True)
    questions_dir = Unicode("", help="Folder with your own questions (as `grade --questions-dir`).").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict):
        cells = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == GRADE_ID]
        if not cells:
            return nb, resources
        student = str(resources.get("nbgrader", {}).get("student", ""))
        assignment = str(resources.get("nbgrader", {}).get("assignment", ""))
        report, score = self.grade(nb, cells[0], student, assignment)
        for cell in cells:
            cell.outputs = [v4.new_output("stream", name="stdout", text=report),
                            v4.new_output("execute_result", data={"text/plain": repr(score)},
                                          execution_count=cell.get("execution_count"))]
        from backprop_traps.grader.notebook_grade import GRADE_ID as SELF_GRADE
        for cell in nb.cells:  # "Grade it" cannot import the kit in the sandboxed kernel: say why
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == SELF_GRADE:
                cell.outputs = [v4.new_output("stream", name="stdout", text=SELF_GRADE_NOTE)]
        return nb, resources

    def grade(self, nb: NotebookNode, cell: NotebookNode, student: str,
              assignment: str = "") -> tuple[str, float]:
        """(the report, the score) of ``nb`` for ``student``'s ``assignment``; 0 with the reason
        on any failure. The report goes back to the student (nbgrader's feedback): it carries
        the run's replay token, never the seed."""
        from backprop_traps.grader.batch import replay_token
        from backprop_traps.grader.batch.grading import known_questions, root_for
        from backprop_traps.grader.batch.variants import hide_secret_from_proc, read_secret, student_seed
        from backprop_traps.grader.engine.draws import new_draw
        from backprop_traps.grader.engine.run import DEFAULT_SEED, grade_path
        from backprop_traps.grader.learner.report import render

        found = _QUESTION_IN_CELL.search(cell.source)  # the locked cell: nbgrader restored its source
        question = found.group(1) if found else None
        if question not in known_questions(self.questions_dir or None):
            return f"This hidden-checks cell names no known question ({question!r}): score 0.\n", 0.0
        root = root_for(question, self.questions_dir or None)  # own questions beside the kit's
        secret = read_secret(None, self.secret_file or None)
        hide_secret_from_proc(secret)  # nbgrader's /proc entries, should the secret be in its environment
        seed = student_seed(secret, student, DEFAULT_SEED, assignment=assignment, question=question)
        draw = new_draw()  # at grading time: the inputs cannot be known before, the seed known or not
        with tempfile.TemporaryDirectory(prefix="bpt-nbgrader-") as folder:
            path = Path(folder) / f"{question}.ipynb"
            path.write_text(nbformat.writes(_without_outputs(nb)), encoding="utf-8")
            result = grade_path(path, question=question, seed=seed, root=root, draw=draw, practice=False)
        result.submission = f"{student}'s notebook"
        result.token = replay_token.make(secret, replay_token.Replay(student, assignment, question, draw))
        points = float(cell.metadata.nbgrader.get("points", result.max_score))
        score = min(float(result.score), points)
        return render(result, color=False) + "\n" + NOTE + "\n", score


def _without_outputs(nb: NotebookNode) -> NotebookNode:
    """The cells as the learner wrote them (nbgrader restored the locked ones); no outputs."""
    import copy
    clean = copy.deepcopy(nb)
    for cell in clean.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return clean


class VisibleTestsCarryNoPoints(NbGraderPreprocessor):
    """At ``generate_assignment``: every autograder test but the hidden-checks cell is worth 0."""

    def preprocess(self, nb: NotebookNode, resources: dict):
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution") and meta.get("grade_id") != GRADE_ID:
                meta["points"] = 0
        return nb, resources


def configure(c, secret_file: str | None = None, questions_dir: str | None = None) -> None:
    """Set up an nbgrader config ``c`` (a ``traitlets.config.Config``) as the docstring says.
    nbgrader then finds the tools it starts by name (``alembic``) beside the Python that runs
    it, even from a venv that is not activated (grader/batch/own_scripts.py)."""
    from backprop_traps.grader.batch.own_scripts import put_own_scripts_first
    put_own_scripts_first()
    from nbgrader.converters import Autograde, GenerateAssignment
    from nbgrader.preprocessors import SaveAutoGrades

    steps = []
    for step in Autograde.class_traits()["autograde_preprocessors"].make_dynamic_default():
        if step is SaveAutoGrades:
            steps.append(SandboxedScore)
        steps.append(SandboxedExecute if step is Execute else step)
    c.Autograde.autograde_preprocessors = steps
    # first: the checksums nbgrader computes later must see the cells as recorded; the stub
    # layout (no derivation, the interview cut to its question) before anything else
    from backprop_traps.grader.authoring.nbgrader_layout import StubLayout
    c.GenerateAssignment.preprocessors = [StubLayout, VisibleTestsCarryNoPoints] + \
        GenerateAssignment.class_traits()["preprocessors"].make_dynamic_default()
    if secret_file:
        c.SandboxedScore.secret_file = str(secret_file)
    if questions_dir:
        c.SandboxedScore.questions_dir = str(questions_dir)
