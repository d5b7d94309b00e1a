"""Do the hidden checks tell right from wrong? The grading half of ``grade validate``.

- the solution gets full marks, and the stub gets 0 with a sentence per check (both
  graded for real, through the sandbox);
- each of the question's traps has a runnable wrong answer, and that answer loses points
  with the trap named. A trap answer is ``tests/answers/<id>/<trap id, - as _>.py`` in the
  questions folder: a snippet that, appended to the solution's code, makes the mistake
  (the same files the question's own tests grade);
- wrong answers made from the reference (``variants``): a check that reads a function's
  answer must fail when it returns zeros, and, for a backward, when it ignores its
  upstream gradient; and every check must fail for at least one wrong answer.
Trap answers and variants run in process (trusted code, about 0.1 s per run).
"""
from __future__ import annotations

from pathlib import Path

from grader.authoring.findings import FAIL, OK, QuestionReport
from grader.authoring.in_process import InProcessCaller, namespace_from_source, run_checks
from grader.authoring.variants import RecordingCaller, caller_with, variants_of
from grader.engine import DEFAULT_SEED, grade_path
from grader.notebook import graded_code, parse_notebook
from grader.questions import exercise_path, solution_path


def trap_answer_path(root: Path, question: str, trap_id: str) -> Path:
    return root / "tests" / "answers" / question / f"{trap_id.replace('-', '_')}.py"


def _points(x: float) -> str:
    return f"{x:g} point" + ("" if x == 1 else "s")


def _failed_lines(result) -> list[str]:
    return [f"{t.name}: {t.feedback.splitlines()[0] if t.feedback else 'failed'}"
            for t in result.tests if not t.passed]


def check_solution(report: QuestionReport, question: str, root: Path, seed: int) -> None:
    result = grade_path(solution_path(question, root), seed=seed, root=root)
    if result.error:
        report.add(FAIL, f"the solution could not be graded: {result.error}")
    elif result.score != result.max_score:
        report.add(FAIL, f"the solution gets {result.score:g}/{result.max_score:g}, not full marks",
                   _failed_lines(result))
    else:
        report.add(OK, f"the solution gets full marks ({result.score:g}/{result.max_score:g})")


def check_stub(report: QuestionReport, question: str, root: Path, seed: int) -> None:
    path = exercise_path(question, root)
    if not path.is_file():
        report.add(FAIL, f"no stub at {path.relative_to(root)}: run `grade release`")
        return
    result = grade_path(path, seed=seed, root=root)
    broken = [t.name for t in result.tests if "Traceback" in t.feedback or "internal grader error" in t.feedback]
    passing = [t.name for t in result.tests if t.passed]
    if result.error:
        report.add(FAIL, f"the stub could not be graded: {result.error}")
    elif passing:
        report.add(FAIL, f"the stub scores {result.score:g}, not 0: these checks pass an empty "
                         "answer, so they cannot fail", [f"check '{n}'" for n in passing])
    elif broken:
        report.add(FAIL, "grading the stub shows a traceback instead of a sentence", broken)
    else:
        report.add(OK, f"the stub gets 0/{result.max_score:g}, with a sentence per check")


def check_traps(report, checks, question: str, root: Path, ref, seed: int) -> dict[str, set]:
    """Grade every trap's answer; returns, per check name, the answers that made it fail."""
    failed_by: dict[str, set] = {c.name: set() for c in checks.checks}
    if not checks.traps:
        report.add(FAIL, f"{question} registers no traps: a question names at least one mistake")
    base = graded_code(parse_notebook(solution_path(question, root).read_text(encoding="utf-8")))
    for trap in checks.traps:
        path = trap_answer_path(root, question, trap.id)
        shown = path.relative_to(root)
        if not path.is_file():
            report.add(FAIL, f"no trap answers registered for '{trap.id}': add {shown}, a snippet "
                             "that, appended to the solution's code, makes this mistake")
            continue
        try:
            namespace = namespace_from_source(base + "\n\n" + path.read_text(encoding="utf-8"), trap.id)
        except Exception as exc:
            report.add(FAIL, f"trap '{trap.id}': {shown} does not run ({type(exc).__name__}: {exc})")
            continue
        results = run_checks(checks, InProcessCaller(namespace), ref, seed)
        lost = sum(r.max_points - r.points for r in results)
        named = sorted({r.trap for r in results if not r.passed and r.trap})
        for r in results:
            if not r.passed:
                failed_by[r.name].add(f"trap answer {trap.id}")
        if lost == 0:
            report.add(FAIL, f"trap '{trap.id}' is no longer caught: {shown} gets full marks")
        elif trap.id not in named:
            report.add(FAIL, f"trap '{trap.id}' loses {_points(lost)} but no check names it "
                             f"(named: {', '.join(named) or 'none'})",
                       [f"{r.name}: {r.feedback.splitlines()[0]}" for r in results if not r.passed])
        else:
            report.add(OK, f"trap '{trap.id}' loses {_points(lost)} and is named")
    return failed_by


def calls_per_check(checks, ref, seed: int) -> dict[str, list[str]]:
    """Which of the learner's functions each check calls (run on the reference)."""
    calls = {}
    for check in checks.checks:
        caller = RecordingCaller(ref)
        run_checks(checks, caller, ref, seed, only={check.name})
        calls[check.name] = sorted(set(caller.calls))
    return calls


def check_variants(report, checks, ref, seed: int, failed_by: dict[str, set]) -> None:
    """Zeros, ignored upstream gradients, random answers and scribbled inputs."""
    calls = calls_per_check(checks, ref, seed)
    functions = sorted({fn for fns in calls.values() for fn in fns})
    weak: list[str] = []
    for fn in functions:
        callers = {name for name, fns in calls.items() if fn in fns}
        outcome = {}
        for variant in variants_of(fn, getattr(ref, fn, None) or (lambda *a: None), seed):
            results = run_checks(checks, caller_with(ref, variant), ref, seed, only=callers)
            outcome[variant.kind] = {r.name: r.passed for r in results}
            for r in results:
                if not r.passed:
                    failed_by[r.name].add(f"{variant.kind} {fn}")
        reads = {name for name in callers if not outcome["garbage"][name]}
        for name in sorted(reads):
            if outcome["zeros"][name]:
                weak.append(f"check '{name}' passes a {fn} that returns zeros")
            if outcome.get("ignores-dout", {}).get(name):
                weak.append(f"check '{name}' passes a {fn} that ignores its upstream gradient "
                            "(uses ones): draw dout at random")
    if weak:
        report.add(FAIL, "checks that cannot fail", weak)
    else:
        report.add(OK, f"every check that reads {', '.join(functions) or 'a function'} fails for "
                       "zeros" + (" and for an ignored upstream gradient" if any(
                           "backward" in f for f in functions) else ""))
    idle = [f"check '{name}' calls none of the learner's functions: it cannot fail"
            for name, fns in calls.items() if not fns]
    idle += [f"check '{name}' passes every wrong answer tried (zeros, random answers, scribbled "
             "inputs, the trap answers): it cannot fail"
             for name, fns in calls.items() if fns and not failed_by.get(name)]
    if idle:
        report.add(FAIL, "checks that pass whatever the answer", idle)
    else:
        report.add(OK, "every check fails for at least one wrong answer")


def check_grading(report: QuestionReport, question: str, root: Path, seed: int = DEFAULT_SEED) -> None:
    """The grading half of validate, for one question."""
    from grader.checks import load_question
    from grader.reference import load_solution
    try:
        checks = load_question(question, root)
    except ModuleNotFoundError:
        report.add(FAIL, f"no hidden checks: write checks/{question}.py (or grader/checks/{question}.py)")
        return
    except Exception as exc:
        report.add(FAIL, f"the checks module does not load ({type(exc).__name__}: {exc})")
        return
    try:
        ref = load_solution(question, root)
    except Exception as exc:
        report.add(FAIL, f"the solution's code does not run ({type(exc).__name__}: {exc})")
        return
    check_solution(report, question, root, seed)
    check_stub(report, question, root, seed)
    failed_by = check_traps(report, checks, question, root, ref, seed)
    check_variants(report, checks, ref, seed, failed_by)
