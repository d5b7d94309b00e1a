"""A check that breaks (an exception that is not a Fail) is the grader's fault: the result
says so (``"grader_error": true`` on the check and the submission), the learner is never told
to check their types, the report shows it as a bug, and `grade batch` does not keep it as a
grade. (No check breaking on any answer of the corpus: tests/questions/test_corpus.py.)"""

from backprop_traps.grader.batch.layouts import Job
from backprop_traps.grader.batch.store import GRADED, GRADER_ERROR, ResultStore
from backprop_traps.grader.engine.context import CheckContext
from backprop_traps.grader.engine.run import _run_one, grade_path
from backprop_traps.grader.engine.question import Check, Question
from backprop_traps.grader.learner.report import render
from backprop_traps.grader.engine.results import GradeResult
from conftest import REPO


def _broken_check(ctx):
    {}["a key the grader forgot"]


def test_a_check_that_raises_is_a_grader_error():
    question = Question("toy", "toy")
    check = Check("a check with a bug", 2.0, _broken_check)
    result = _run_one(check, CheckContext(question, sandbox=None, ref=None, seed=1, check_name=check.name))
    assert result.grader_error and not result.passed and result.points == 0
    assert "grader" in result.feedback and "not a problem with your answer" in result.feedback
    assert "check the types" not in result.feedback
    assert result.to_json()["grader_error"] is True
    graded = GradeResult("a.py", "toy", 0.0, 2.0, tests=[result])
    assert graded.grader_error and graded.to_json()["grader_error"] is True
    assert "BUG" in render(graded, color=False) and "not your answer's fault" in render(graded, color=False)


def test_a_clean_result_carries_no_grader_error_key():
    result = grade_path(REPO / "solutions" / "01_routing_trap.ipynb")
    doc = result.to_json()
    assert "grader_error" not in doc and not any("grader_error" in t for t in doc["tests"])


def test_a_crash_of_the_engine_is_a_grader_error(monkeypatch, tmp_path):
    from backprop_traps.grader.engine import run as engine
    monkeypatch.setattr(engine, "_grade", lambda *a, **k: 1 / 0)
    result = engine.grade_path(tmp_path / "a.py")
    assert result.error.startswith("internal grader error") and result.to_json()["grader_error"] is True


def test_batch_does_not_keep_a_grader_error_as_a_grade(tmp_path):
    store = ResultStore(tmp_path)
    job = Job(path=tmp_path / "a.py", rel="alice/a.py", student="alice", question="routing_trap")
    meta = {"student": "alice", "seed": 7, "sha256": "abc", "status": GRADED}
    ok = {"submission": "a.py", "question": "routing_trap", "score": 1.0, "max_score": 2.0,
          "error": None, "tests": []}
    store.write(job, ok, meta)
    assert store.done(job, 7, "abc")
    store.write(job, {**ok, "grader_error": True}, meta)
    assert not store.done(job, 7, "abc")  # graded again by the next run
    assert store.load(job)[1]["status"] == GRADER_ERROR

# That no check breaks on any answer of the corpus is asserted by tests/questions/test_corpus.py,
# which grades every file of tests/answers/ once.
