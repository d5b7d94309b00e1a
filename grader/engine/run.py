"""The grading engine: one submission in, one ``GradeResult`` out, never an exception.

``grade_path`` reads the submission, finds its question, starts the sandbox, runs every
hidden check against the learner's functions and the reference (the solution notebook),
and always returns a result, whatever the file or the code in it does.
"""
from __future__ import annotations

from pathlib import Path

from backprop_traps.grader.loading.hidden_checks import load_question
from backprop_traps.grader import timeline
from backprop_traps.grader.engine.call_memo import CallMemo, SandboxRefused
from backprop_traps.grader.engine.draws import SECRET_ENV, checks_seed, is_draw, is_practice  # noqa: F401 (SECRET_ENV: its old place)
from backprop_traps.grader.engine.question import Fail
from backprop_traps.grader.loading.questions import questions_root, solution_notebooks
from backprop_traps.grader.loading.reference import load_solution, setup_code
from backprop_traps.grader.engine.results import CheckResult, GradeResult
from backprop_traps.grader.sandbox.limits import Limits
from backprop_traps.grader.sandbox.channel import REFUSED
from backprop_traps.grader.sandbox import warm
from backprop_traps.grader.sandbox.process import Sandbox
from backprop_traps.grader.sandbox.visibility import submission_hides
from backprop_traps.grader.loading.submission import load_submission

DEFAULT_SEED = 1234
SANDBOX_START = ("This is the grader's fault, not your answer's: nothing of yours was graded. "
                 "`grade doctor` checks the sandbox; please report it with your file.")
SANDBOX_FAULT = ("This is the grader's sandbox failing an honest library, not a problem with your "
                 "answer: please report it with your file.")


def grade_path(path: str | Path, question: str | None = None, seed: int | None = None,
               limits: Limits = Limits(), root: str | Path | None = None,
               visible_tests: bool = False, practice: bool | None = None,
               draw: str | None = None, keep_warm: bool = False) -> GradeResult:
    """Grade one submission file. ``question`` overrides what the file says.

    ``visible_tests`` also runs a notebook's visible test cells (``result.public``, unscored).
    ``practice``: whether this is a learner's own practice, where memory is measured by the
    practice meter when no tamper-proof one exists (labelled so); a course (``grade batch``,
    nbgrader, a replay) passes False. None: practice, unless a course secret is set
    (``BACKPROP_TRAPS_SECRET``).
    ``draw``: a course's value drawn at grading time (engine/draws.py); the checks' inputs
    then come from the seed and the draw together, and ``--seed`` alone does not replay it.
    ``keep_warm``: another grading with the same limits follows (a batch, several files): its
    sandbox starts now, while this one is graded (``sandbox/warm.py``)."""
    if draw is not None and not is_draw(draw):
        raise ValueError(f"a draw is 32 hex digits, not {draw!r}")
    practice = is_practice(practice, draw)
    try:
        return _grade(path, question, seed, limits, root, visible_tests, practice, draw, keep_warm)
    except Exception as exc:  # a bug of ours must not sink a batch: record it and go on
        return GradeResult(submission=str(path), question=question, score=0.0, max_score=0.0,
                           seed=seed, draw=draw, internal_error=True,
                           error=f"internal grader error ({type(exc).__name__}: {exc}); "
                                 "please report it with this file")


def _grade(path, question, seed, limits, root, visible_tests=False, practice=False, draw=None,
           keep_warm=False) -> GradeResult:
    root = questions_root(root)
    seed = DEFAULT_SEED if seed is None else seed
    sub = load_submission(path, question)
    known = solution_notebooks(root)
    timeline.mark("read the submission")
    result = GradeResult(submission=str(path), question=sub.question, score=0.0, max_score=0.0,
                         seed=seed, draw=draw)
    if sub.error is None:
        result.fingerprint = sub.fingerprint
    if sub.question is not None and sub.question not in known:
        result.error = (f"unknown question '{sub.question}'; the questions are: {', '.join(known)}")
        return result
    if sub.question is None or sub.error:
        return _refuse(sub, root, known, result)
    from backprop_traps.grader.engine.wrong_question import looks_like, sentence
    other = looks_like(sub, sub.question, root)  # a file for another question: say which (issue 24)
    timeline.mark("which question it answers")
    if other is not None:
        question = _question_or_say_why(sub.question, root, result)
        if question is not None:
            result.max_score = question.max_score
            result.error = sentence(sub.path, sub.question, other, root)
        return result
    # the child boots (bubblewrap, Python, numpy) while the question and its reference load;
    # or it was started before this grading began (warm.prepare), for exactly this
    hide = submission_hides(root, sub.path)
    taken = warm.take(limits, hide, practice)
    sandbox = taken.adopt(sub.source, sub.cells, hide) if taken is not None else \
        Sandbox(sub.source, limits, hide=hide, cells=sub.cells, practice=practice)
    sandbox.launch()
    from backprop_traps.grader.sandbox.machine_speed import calibrated  # probed while the child boots
    sandbox.limits = calibrated(limits, practice)
    after_load = (lambda: warm.prepare(limits, hide, practice)) if keep_warm else None
    try:
        with sandbox:
            question = _question_or_say_why(sub.question, root, result)  # once: an instructor's checks run by path
            timeline.mark("load the question's checks")
            if question is None:
                return result
            result.max_score = question.max_score
            sandbox.expect_measured_calls(question.expected_measured_calls)
            return _run_checks(sub, question, root, seed, sandbox, result, visible_tests, after_load)
    finally:
        timeline.mark("close the sandbox")


def _question_or_say_why(question_id: str, root: Path, result: GradeResult):
    """The question's checks, or None with the reason in ``result.error``."""
    try:
        return load_question(question_id, root)
    except ModuleNotFoundError:
        result.error = f"question '{question_id}' has no hidden checks yet"
        return None


def _refuse(sub, root: Path, known: dict, result: GradeResult) -> GradeResult:
    """A submission that cannot be graded: the reason, with the question's full score."""
    if sub.question is not None:
        question = _question_or_say_why(sub.question, root, result)
        if question is None:
            return result
        result.max_score = question.max_score
    if sub.error:
        result.error = sub.error
        return result
    result.error = ("could not tell which question this answers: no question in the notebook's "
                    f"metadata or a '# question: <id>' line; use --question ({', '.join(known)})")
    return result


def _run_checks(sub, question, root: Path, seed: int, sandbox: Sandbox, result: GradeResult,
                visible_tests: bool = False, after_load=None) -> GradeResult:
    ref = _Reference(sub.question, root)  # loaded on first use
    helpers, services = question.services() if question.services else ("", {})
    if question.grader_setup and not helpers:
        helpers = setup_code(sub.question, root)
    sandbox.helpers, sandbox.services = helpers, dict(services)
    source_child = None
    if question.source_harness:  # the grader's own child, booting while the learner's code loads
        from backprop_traps.grader.sandbox.source_child import SourceChild
        source_child = SourceChild(sandbox, question.source_harness())
        source_child.begin()
        timeline.mark("launch the second child (the grader's own, for kernels)")
    try:
        return _checks(sub, question, ref, sandbox, source_child, seed, result, visible_tests, after_load)
    finally:
        if source_child is not None:
            source_child.close()


def _checks(sub, question, ref, sandbox: Sandbox, source_child, seed: int, result: GradeResult,
            visible_tests: bool, after_load=None) -> GradeResult:
    from backprop_traps.grader.engine.context import CheckContext  # numpy: after the child was launched
    timeline.mark("import the checks' context (numpy)")
    loaded = sandbox.start()  # a notebook loads cell by cell, past errors
    if after_load is not None:  # the next grading's sandbox (keep_warm): it boots while this
        after_load()            # one's checks run, not while this one boots
        timeline.mark("launch the next grading's sandbox (keep_warm)")
    result.isolation = sandbox.isolation
    if sandbox.not_started:  # the grader's or the machine's fault: an error, never the learner's 0
        result.error = f"{sandbox.not_started}. {SANDBOX_START}"
        result.internal_error = True
        return result
    calls = CallMemo(sandbox)  # a function that timed out once is not run again
    calls.source_child = source_child
    for check in question.checks:
        if not loaded.ok:
            refused = loaded.kind == REFUSED  # e.g. the grader's helpers, broken by the sandbox
            outcome = CheckResult(check.name, 0.0, check.points, False, hints=check.hints, grader_error=refused,
                                  feedback=f"Your code could not be loaded: {loaded.error}."
                                           + (f" {SANDBOX_FAULT}" if refused else ""))
        else:
            outcome = _run_one(check, CheckContext(question, calls, ref, checks_seed(seed, result.draw),
                                                   check.name))
        result.tests.append(outcome)
        timeline.mark(f"check: {check.name}")
    if visible_tests and loaded.ok:
        from backprop_traps.grader.engine.visible_tests import manual_cells, run_visible_tests
        result.public = run_visible_tests(sandbox, sub.path, sub.notebook)  # the notebook parsed once
        result.manual = manual_cells(sub.path, sub.notebook)
        timeline.mark("the notebook's visible tests")
    if sandbox.not_started:  # a restart failed midway: the checks left did not grade the learner
        for t in result.tests:
            if not t.passed and not t.grader_error:
                t.grader_error = True
                t.feedback = f"{t.feedback}\n{sandbox.not_started}. {SANDBOX_START}".strip()
    if sandbox.refused:  # loading failed because of the sandbox: what fails is not the learner's doing
        for t in result.tests:
            if not t.passed and not t.grader_error:
                t.grader_error = True
                t.feedback = f"{t.feedback}\nWhile your code loaded: {sandbox.refused} {SANDBOX_FAULT}".strip()
    result.output = sandbox.output
    result.memory = sandbox.memory_meter
    result.warnings = list(sandbox.warnings)
    result.score = sum(t.points for t in result.tests)
    return result


class _Reference:
    """The solution's functions, loaded on first use: a question whose checks never read
    ``ctx.ref`` (maxpool_kernel: its reference is numpy in the checks) does not pay for
    running the solution's imports (numba) in the grader."""

    def __init__(self, question: str, root: Path):
        self._question, self._root, self._loaded = question, root, None
        self.solution_path = solution_notebooks(root).get(question)
        """Where the solution is, read without loading it (grader/engine/upstream.py)."""

    def __getattr__(self, name):
        if self._loaded is None:
            self._loaded = load_solution(self._question, self._root)
        return getattr(self._loaded, name)


def _run_one(check, ctx: CheckContext) -> CheckResult:
    import numpy as np
    with np.errstate(all="ignore"):  # a learner's value at float64's edge (1e308) must not print the
        return _judged(check, ctx)   # grader's own RuntimeWarnings, with its paths, above the report


def _judged(check, ctx: CheckContext) -> CheckResult:
    try:
        check.run(ctx)
    except SandboxRefused as refused:  # the sandbox broke an honest library: never the learner's
        return CheckResult(check.name, 0.0, check.points, False, hints=check.hints, grader_error=True,
                           feedback=f"{refused} {SANDBOX_FAULT}")
    except Fail as fail:
        from backprop_traps.grader.engine.trap_feedback import split
        from backprop_traps.grader.engine.upstream import explain
        timeline.mark(f"check (failed): {check.name}")
        fail = explain(ctx, fail) or fail  # a downstream function is never blamed for an upstream one
        timeline.mark("  upstream replay")
        feedback, hints = split(ctx.question, check, fail.feedback, fail.trap)
        hints = fail.hints or hints
        return CheckResult(check.name, 0.0, check.points, False, trap=fail.trap,
                           feedback=feedback, hints=hints, grader_error=fail.grader_error)
    except Exception as exc:  # not a Fail: the check itself broke, which is the grader's fault
        return CheckResult(check.name, 0.0, check.points, False, hints=check.hints, grader_error=True,
                           feedback=f"Internal grader error in this check ({type(exc).__name__}: "
                                    f"{str(exc)[:200]}). This is a bug in the grader, not a problem "
                                    "with your answer: please report it with your file and the seed.")
    return CheckResult(check.name, check.points, check.points, True, hints=check.hints)
