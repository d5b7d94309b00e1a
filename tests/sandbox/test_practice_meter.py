"""The practice meter (issue 39): with cgroups switched off (``BACKPROP_TRAPS_NO_CGROUP=1``),
a learner's own practice still measures memory: every memory question's solution gets full
marks, a store-everything answer fails, and both say "practice meter: not tamper-proof", in
words and in ``--json``. A course (a course secret, ``grade batch``, a replay) keeps the rule:
no tamper-proof meter, no memory points, and the reason."""
import json

import pytest
from click.testing import CliRunner

from backprop_traps.grader.checks import load_question
from backprop_traps.grader.cli import main
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.loading.questions import solution_notebooks
from backprop_traps.grader.sandbox import cgroup
from backprop_traps.grader.sandbox.measure import PRACTICE

MEMORY_QUESTIONS = sorted(q for q in solution_notebooks() if load_question(q).memory_paths)
STORES_EVERYTHING = {"vram_trap": ("stores_everything", "stores-everything"),
                     "attention_backward": ("materialises_p", "materialises-p"),
                     "grad_accumulation": ("full_batch_at_once", "full-batch-at-once"),
                     "memory_budget": ("stores_everything", "stores-everything")}
"""Each memory question's answer that keeps every activation, and the trap its memory check names."""


@pytest.fixture
def no_cgroup(monkeypatch):
    monkeypatch.setenv(cgroup.DISABLE, "1")
    monkeypatch.delenv("BACKPROP_TRAPS_SECRET", raising=False)


def memory_checks(result):
    question = load_question(result.question)
    return [t for t in result.tests if next(c for c in question.checks if c.name == t.name).memory]


def test_every_memory_question_is_covered():
    assert MEMORY_QUESTIONS and set(MEMORY_QUESTIONS) <= set(STORES_EVERYTHING), (
        "a question measures memory: add its store-everything answer to STORES_EVERYTHING")


@pytest.mark.parametrize("question", MEMORY_QUESTIONS)
def test_the_solution_gets_full_marks_with_the_practice_meter(no_cgroup, question):
    result = grade_path(solution_notebooks()[question])
    assert result.score == result.max_score, [(t.name, t.feedback) for t in result.tests if not t.passed]
    assert result.memory == PRACTICE and result.to_json()["memory"] == PRACTICE
    assert "practice meter" in result.isolation


@pytest.mark.parametrize("question", MEMORY_QUESTIONS)
def test_a_store_everything_answer_fails_with_the_practice_meter(no_cgroup, answer_file, question):
    name, trap = STORES_EVERYTHING[question]
    result = grade_path(answer_file(question, name))
    failed = [t for t in memory_checks(result) if not t.passed]
    assert failed and all("cannot be measured" not in t.feedback for t in failed), failed
    assert trap in {t.trap for t in failed}, [(t.name, t.trap, t.feedback) for t in failed]
    assert result.memory == PRACTICE


def test_the_report_says_practice_meter_in_words_and_in_json(no_cgroup, answer_file):
    path = answer_file("vram_trap", "stores_everything")
    words = CliRunner().invoke(main, [str(path)]).output
    assert "Memory: measured by the practice meter, not tamper-proof" in words, words
    assert "a course gives memory points only with a tamper-proof meter" in words
    doc = json.loads(CliRunner().invoke(main, [str(path), "--json"]).output)
    assert doc["memory"] == "practice meter: not tamper-proof", doc
    assert doc["score"] == 9


def test_a_course_gives_no_memory_points_without_a_tamper_proof_meter(no_cgroup, monkeypatch):
    """A course secret in the environment, or ``practice=False`` (batch, nbgrader): today's rule."""
    solution = solution_notebooks()["vram_trap"]
    monkeypatch.setenv("BACKPROP_TRAPS_SECRET", "a-course-secret")
    for result in (grade_path(solution), grade_path(solution, practice=False)):
        memory = memory_checks(result)
        assert memory and not any(t.passed for t in memory)
        assert result.score == result.max_score - sum(t.max_points for t in memory)
        for t in memory:
            assert "cannot be measured" in t.feedback and "course" in t.feedback, t.feedback
            assert "switched off" in t.feedback, t.feedback  # why there is no cgroup here
        assert result.memory.startswith("not measured") and result.to_json()["memory"] == result.memory


def test_an_instructors_replay_is_a_courses_run(no_cgroup):
    doc = json.loads(CliRunner().invoke(main, [str(solution_notebooks()["vram_trap"]), "--json",
                                               "--replay"]).output)
    assert doc["score"] == 9 and doc["memory"].startswith("not measured"), doc


def test_a_batch_is_a_course(no_cgroup, tmp_path):
    src = tmp_path / "class" / "amy"
    src.mkdir(parents=True)
    (src / "03_vram_trap.ipynb").write_bytes(solution_notebooks()["vram_trap"].read_bytes())
    run = CliRunner().invoke(main, ["batch", str(tmp_path / "class"), "-o", str(tmp_path / "out"), "-j", "1"])
    assert run.exit_code == 0, run.output
    result = json.loads(next((tmp_path / "out" / "results").glob("amy__03_vram_trap*[0-9a-f].json")).read_text())
    assert result["score"] == 9 and result["memory"].startswith("not measured"), result


def test_with_a_cgroup_practice_uses_the_tamper_proof_meter(monkeypatch):
    """The practice meter only stands in where no tamper-proof one exists."""
    version, why = cgroup.available()
    if not version:
        pytest.skip(f"no cgroup for the grader here: {why}")
    monkeypatch.delenv("BACKPROP_TRAPS_SECRET", raising=False)
    result = grade_path(solution_notebooks()["vram_trap"])
    assert result.score == 12 and result.memory == f"cgroup v{version}: tamper-proof"


def test_the_report_gives_the_systemd_command_where_it_would_help(monkeypatch):
    from backprop_traps.grader.engine.results import GradeResult
    from backprop_traps.grader.learner.report import render
    from backprop_traps.grader.sandbox import systemd_scope
    monkeypatch.setattr(systemd_scope, "user_manager_running", lambda: True)
    practice = render(GradeResult("my answer.ipynb", "vram_trap", 12, 12, memory=PRACTICE,
                                  isolation="bubblewrap"), color=False)
    assert "Memory: measured by the practice meter" in practice
    assert "`systemd-run --user --scope -p Delegate=yes grade 'my answer.ipynb'`" in practice, practice
    trusted = render(GradeResult("a.ipynb", "vram_trap", 12, 12, memory="cgroup v2: tamper-proof",
                                 isolation="bubblewrap"), color=False)
    assert "Memory:" not in trusted and "systemd-run" not in trusted
    monkeypatch.setattr(systemd_scope, "user_manager_running", lambda: False)
    assert "systemd-run" not in render(GradeResult("a.ipynb", "vram_trap", 12, 12, memory=PRACTICE,
                                                   isolation="bubblewrap"), color=False)


def test_a_systemd_user_manager_is_found_only_for_an_unprivileged_user(monkeypatch, tmp_path):
    import os
    import shutil
    from backprop_traps.grader.sandbox import systemd_scope
    (tmp_path / "systemd").mkdir()
    (tmp_path / "systemd" / "private").touch()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert systemd_scope.user_manager_running()
    assert systemd_scope.hint() == ("to give grading a cgroup of its own, run it in a delegated systemd scope: "
                                    "`systemd-run --user --scope -p Delegate=yes grade FILE`")
    monkeypatch.setattr(os, "geteuid", lambda: 0)  # root needs no delegation
    assert not systemd_scope.user_manager_running() and systemd_scope.hint() == ""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    (tmp_path / "systemd" / "private").unlink()  # no user manager
    assert not systemd_scope.user_manager_running()


def test_without_proc_the_worker_traces_its_allocations(no_cgroup, monkeypatch, answer_file):
    """macOS and the like: no /proc for the grader to read, so the worker traces the call's numpy
    allocations and sends the peak (a plain number, or nothing counts). Same verdicts on numpy
    answers; a torch answer's tensors are not traced (the fallback's known limit)."""
    from backprop_traps.grader.sandbox import practice_meter

    def no_proc(*_):
        raise FileNotFoundError(2, "No such file or directory: '/proc/self/status'")
    monkeypatch.setattr(practice_meter, "_status", no_proc)
    right = grade_path(solution_notebooks()["vram_trap"])
    wrong = grade_path(answer_file("vram_trap", "stores_everything"))
    assert right.score == 12 and right.memory == PRACTICE, [t.feedback for t in right.tests if not t.passed]
    assert wrong.score == 9 and "stores-everything" in {t.trap for t in wrong.tests}


def test_a_traced_peak_that_is_not_a_plain_number_counts_nothing():
    from backprop_traps.grader.sandbox.practice_meter import PracticeMeter
    meter = PracticeMeter()
    meter.traced = True
    for forged in ("0", -5, 1.5, True, None, [1]):
        assert meter.read({}, {"traced_peak": forged})["peak"] is None, forged
    assert meter.read({}, {"traced_peak": 1024})["peak"] == 1024
