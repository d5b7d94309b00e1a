"""`grade new` scaffolds a question the grader finds by itself; `grade validate` proves the
shipped questions sound and names each planted fault in a copy (via --questions-dir)."""
import shutil
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from backprop_traps.grader.authoring.findings import QuestionReport
from backprop_traps.grader.authoring.soundness import check_traps
from backprop_traps.grader.authoring.validate import validate_question
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.cli import main
from backprop_traps.grader.loading.questions import solution_notebooks
from backprop_traps.grader.loading.reference import load_solution
from backprop_traps.grader.authoring.release import release
from conftest import ANSWERS, REPO


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def lines(report, status="FAIL"):
    return "\n".join(f.text + "\n" + "\n".join(f.details) for f in report.findings if f.status == status)


# -- grade new -----------------------------------------------------------------------------
def test_new_scaffolds_a_question_found_with_no_central_list(tmp_path):
    out = invoke("new", "scale_rows", "--questions-dir", tmp_path)
    assert out.exit_code == 0, out.output
    for rel in ("solutions/01_scale_rows.ipynb", "exercises/01_scale_rows.ipynb", "checks/scale_rows.py",
                "kernels/scale_rows.py", "tests/kernels/test_scale_rows_kernels.py",
                "tests/test_scale_rows.py", "tests/answers/scale_rows/sign_flipped.py"):
        assert (tmp_path / rel).is_file(), rel
    assert list(solution_notebooks(tmp_path)) == ["scale_rows"]
    question = load_question("scale_rows", tmp_path)
    assert [t.id for t in question.traps] == ["sign-flipped"] and len(question.checks) == 2
    nb = nbformat.read(str(tmp_path / "solutions/01_scale_rows.ipynb"), as_version=4)
    assert nb.metadata.backprop_traps.question == "scale_rows"
    assert all("nbgrader" in c.metadata for c in nb.cells if c.cell_type == "code")
    from backprop_traps.grader.authoring.nbgrader_cell import find_cell
    assert find_cell(nb).metadata.nbgrader.points == question.max_score
    assert nb.cells[-1].metadata.nbgrader.grade_id == "grade_this_notebook"  # "Grade it" closes it


def test_new_refuses_bad_ids_and_existing_questions(tmp_path):
    assert "not a usable id" in invoke("new", "Bad-Id", "--questions-dir", tmp_path).output
    assert invoke("new", "scale_rows", "--questions-dir", tmp_path).exit_code == 0
    again = invoke("new", "scale_rows", "--questions-dir", tmp_path)
    assert again.exit_code == 2 and "already exists" in again.output


# -- the shipped questions -----------------------------------------------------------------
def _has_checks(question):
    try:
        load_question(question)
        return True
    except ModuleNotFoundError:
        return False


def _without_own_validate_test(question: str) -> bool:
    """Questions whose own tests/test_<id>.py does not already run `grade validate --quick`."""
    own = Path(__file__).resolve().parents[1] / "questions" / f"test_{question}.py"
    return not (own.exists() and "_is_sound" in own.read_text(encoding="utf-8"))


@pytest.mark.parametrize("question", [q for q in solution_notebooks()
                                      if _has_checks(q) and _without_own_validate_test(q)])
def test_every_shipped_question_with_checks_is_sound(question):
    report = validate_question(question, quick=True)
    assert report.ok, report.text()


# -- planted faults in a copy ---------------------------------------------------------------
@pytest.fixture
def routing_copy(tmp_path):
    """routing_trap in a questions folder of its own: notebooks, checks, trap answers."""
    for folder in ("solutions", "exercises"):
        (tmp_path / folder).mkdir()
        shutil.copy(REPO / folder / "01_routing_trap.ipynb", tmp_path / folder)
    (tmp_path / "checks").mkdir()
    shutil.copytree(REPO / "grader" / "checks" / "routing_trap", tmp_path / "checks" / "routing_trap",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ANSWERS / "routing_trap", tmp_path / "tests" / "answers" / "routing_trap")
    return tmp_path


def test_the_copy_is_sound_and_the_command_says_so(routing_copy):
    out = invoke("validate", "--quick", "--questions-dir", routing_copy)
    assert out.exit_code == 0, out.output
    assert "routing_trap: sound" in out.output and "FAIL" not in out.output


PLANTED_CHECKS = '''

@QUESTION.check("planted: always passes", points=1)
def planted_always(ctx):
    pass


@QUESTION.check("planted: backward no larger than the reference", points=1)
def planted_zeros_pass(ctx):
    x = tie_free(ctx.rng, (1, 1, 4, 4))
    out, argmax = ctx.ref.maxpool2d_forward(x, 2, 2)
    dout = upstream(ctx.rng, out.shape)
    dx = ctx.call("maxpool2d_backward", dout, argmax, x.shape, 2, 2)
    if np.abs(dx).max() > np.abs(ctx.ref.maxpool2d_backward(dout, argmax, x.shape, 2, 2)).max() + 1e-9:
        raise Fail("too large")


@QUESTION.check("planted: backward with an all-ones upstream", points=1)
def planted_ones_dout(ctx):
    x = tie_free(ctx.rng, (1, 1, 4, 4))
    out, argmax = ctx.ref.maxpool2d_forward(x, 2, 2)
    dout = np.ones(out.shape)
    dx = ctx.call("maxpool2d_backward", dout, argmax, x.shape, 2, 2)
    ctx.expect_array("dx", dx, ctx.ref.maxpool2d_backward(dout, argmax, x.shape, 2, 2), "maxpool2d_backward")
'''


def test_validate_names_each_planted_fault(routing_copy):
    checks = routing_copy / "checks" / "routing_trap" / "__init__.py"
    text = checks.read_text().replace("from backprop_traps.grader.engine.question import Question, Trap",
                                      "from backprop_traps.grader.engine.question import Fail, Question, Trap")
    # the tie check is no longer registered: the tie-order answer goes uncaught
    text = text.replace('@QUESTION.check("max-pool forward: windows with tied maxima"',
                        '@(lambda *a, **k: (lambda f: f))("unregistered"')
    checks.write_text(text + PLANTED_CHECKS)
    solution = routing_copy / "solutions" / "01_routing_trap.ipynb"
    nb = nbformat.read(str(solution), as_version=4)
    leaked = "argmax = (h * W + w).astype(np.int64)"
    assert any(leaked in c.source for c in nb.cells if c.cell_type == "code")
    nb.cells[0].source += f"\n\nA hint: `{leaked}`\n\n    {leaked}"
    nbformat.write(nb, str(solution))
    release("routing_trap", routing_copy)

    report = validate_question("routing_trap", routing_copy, quick=True)
    failed = lines(report)
    assert "trap 'tie-order' is no longer caught" in failed
    assert "check 'planted: always passes' calls none of the learner's functions" in failed
    assert "the stub scores 1, not 0" in failed
    assert "check 'planted: backward no larger than the reference' passes a maxpool2d_backward that returns zeros" in failed
    assert "check 'planted: backward with an all-ones upstream' passes a maxpool2d_backward that ignores its upstream gradient" in failed
    assert f"solution line: {leaked}" in failed
    assert "stale stub" not in failed

    nb = nbformat.read(str(solution), as_version=4)  # edit the solution, forget to release
    nb.cells[0].source += "\n\nOne more sentence."
    nbformat.write(nb, str(solution))
    out = invoke("validate", "--quick", "--questions-dir", routing_copy)
    assert out.exit_code == 1 and "stale stub: exercises/01_routing_trap.ipynb" in out.output
    assert "Traceback" not in out.output


def test_a_missing_trap_answer_is_a_clear_line(routing_copy):
    (routing_copy / "tests" / "answers" / "routing_trap" / "avg_unscaled.py").unlink()
    report = QuestionReport("routing_trap")
    check_traps(report, load_question("routing_trap", routing_copy), "routing_trap", routing_copy,
                load_solution("routing_trap", routing_copy), seed=1)
    assert "no trap answers registered for 'avg-unscaled': add tests/answers/routing_trap/avg_unscaled.py" in lines(report)


def test_a_question_without_checks_is_a_clear_line(routing_copy):
    shutil.copy(routing_copy / "solutions" / "01_routing_trap.ipynb", routing_copy / "solutions" / "02_no_checks.ipynb")
    release("no_checks", routing_copy)
    out = invoke("validate", "no_checks", "--quick", "--questions-dir", routing_copy)
    assert out.exit_code == 1 and "no hidden checks: write checks/no_checks.py" in out.output
    assert "Traceback" not in out.output
