"""``grade validate``'s machine-class proof (issue 39): a solution graded on memory gets full
marks, as a learner's practice, on every machine class the README names that this machine
can be switched into; a class it cannot give is skipped with the reason, a lost point fails."""
import os

from backprop_traps.grader.authoring import machine_classes
from backprop_traps.grader.authoring.findings import FAIL, OK, SKIP, QuestionReport
from backprop_traps.grader.loading.questions import questions_root
from backprop_traps.grader.sandbox import bwrap, cgroup


def findings(question, quick=False):
    report = QuestionReport(question)
    machine_classes.check_machine_classes(report, question, questions_root(None), 1234, quick=quick)
    return report


def test_the_vram_solution_gets_full_marks_on_every_class_this_machine_gives():
    report = findings("vram_trap")
    assert report.ok, report.text()
    proven = [f for f in report.findings if f.status == OK]
    skipped = " ".join(" ".join(f.details) for f in report.findings if f.status == SKIP)
    for name in machine_classes.CLASSES:
        assert name in proven[0].text or name in skipped, (name, report.text())
    if not machine_classes.unavailable("bubblewrap without a cgroup"):
        assert "bubblewrap without a cgroup (practice meter: not tamper-proof)" in proven[0].text
    assert "nothing but rlimits" in skipped
    assert os.environ.get(cgroup.DISABLE) is None and os.environ.get(bwrap.FORCE_OFF) is None, "switches left set"


def test_a_question_that_measures_no_memory_has_nothing_to_prove():
    assert findings("softmax_ce").findings == []


def test_a_point_lost_on_one_class_fails_validate(monkeypatch):
    from backprop_traps.grader.engine import run
    real = run.grade_path

    def poorer_without_cgroup(*args, **kw):
        result = real(*args, **kw)
        if os.environ.get(cgroup.DISABLE) == "1":
            result.score -= 3
        return result
    monkeypatch.setattr(run, "grade_path", poorer_without_cgroup)
    report = findings("vram_trap", quick=True)
    failed = [f for f in report.findings if f.status == FAIL]
    assert failed and "bubblewrap without a cgroup" in failed[0].details[0], report.text()
