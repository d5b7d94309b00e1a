"""Do the hidden checks tell right from wrong? The grading half of ``grade validate``.

- the solution gets full marks, and the stub gets 0 with a sentence per check (both
  graded for real, through the sandbox);
- every answer in ``tests/answers/<id>/`` gets what it expects (``corpus``: full marks,
  lost points with a trap named, or lost points), graded for real through the sandbox, one
  line per mismatch, and no check breaks (a grader error) on any of them; each of the
  question's traps has at least one answer that expects it;
- no free points (``free_points``): answers whose functions all return None, zeros, NaN or
  their own input, or raise, score 0 on every check;
- wrong answers made from the reference (``variants``, ``free_points``): a check that reads
  a function's answer must fail when that function alone returns zeros, None, NaN or its
  input, or raises, and, for a backward, when it ignores its upstream gradient; and every
  check must fail for at least one wrong answer.
Made-up answers run in process (trusted code, about 0.1 s per run).
"""
from __future__ import annotations

from pathlib import Path

from backprop_traps.grader.authoring import corpus
from backprop_traps.grader.authoring.findings import FAIL, OK, SKIP, QuestionReport
from backprop_traps.grader.authoring.free_points import KINDS as FREE_KINDS, WORD as FREE_WORD
from backprop_traps.grader.authoring.free_points import check_no_free_points, contract_functions, degenerate_variants
from backprop_traps.grader.authoring.in_process import run_checks
from backprop_traps.grader.authoring.variants import RecordingCaller, caller_with, variants_of
from backprop_traps.grader.engine.run import DEFAULT_SEED, grade_path
from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
from backprop_traps.grader.loading.questions import exercise_path, solution_path


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
    broken = [t.name for t in result.tests if "Traceback" in t.feedback or t.grader_error]
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


def check_corpus(report, checks, question: str, root: Path, seed: int) -> dict[str, set]:
    """Grade every answer of the corpus by its expectation; returns, per check name, the
    answers that made it fail."""
    failed_by: dict[str, set] = {c.name: set() for c in checks.checks}
    trap_ids = [t.id for t in checks.traps]
    if not checks.traps:
        report.add(FAIL, f"{question} registers no traps: a question names at least one mistake")
    found = corpus.answers(root, question, trap_ids)
    for trap in trap_ids:
        if not any(a.kind == "trap" and a.trap == trap for a in found):
            shown = trap_answer_path(root, question, trap).relative_to(root)
            report.add(FAIL, f"no trap answers registered for '{trap}': add {shown}, a snippet "
                             "that, appended to the solution's code, makes this mistake (or any "
                             f"answer file with a '# expect: trap={trap}' line)")
    base = graded_code(parse_notebook(solution_path(question, root).read_text(encoding="utf-8")))
    right, wrong, unchecked = [], [], []
    for answer in found:
        shown = answer.path.relative_to(root)
        if answer.kind == "":
            unchecked.append(answer.path.name)
            continue
        if answer.kind == "trap" and answer.trap not in trap_ids:
            report.add(FAIL, f"{shown}: expects trap '{answer.trap}', which {question} does not register")
            continue
        result = corpus.grade_answer(answer, question, root, seed, base)
        for t in result.tests:
            if t.grader_error:
                report.add(FAIL, f"{shown}: check '{t.name}' breaks inside the grader",
                           [t.feedback.splitlines()[0] if t.feedback else ""])
            if not t.passed and answer.kind != "full":
                failed_by[t.name].add(f"answer {answer.path.stem}")
        problem = corpus.mismatch(answer, result, str(shown))
        if problem:
            report.add(FAIL, problem)
        elif answer.kind == "trap":
            lost = result.max_score - result.score
            report.add(OK, f"trap '{answer.trap}' loses {_points(lost)} and is named ({answer.path.name})")
        else:
            (right if answer.kind == "full" else wrong).append(answer.path.name)
    if right:
        report.add(OK, f"{len(right)} right answer(s) get full marks: {', '.join(right)}")
    if wrong:
        report.add(OK, f"{len(wrong)} wrong answer(s) lose points: {', '.join(wrong)}")
    if unchecked:
        report.add(SKIP, f"no expectation (no '# expect:' line, not named after a trap): {', '.join(unchecked)}")
    return failed_by


def check_traps(report, checks, question: str, root: Path, ref=None, seed: int = DEFAULT_SEED) -> dict[str, set]:
    """The corpus check under its former name (``ref`` is no longer needed)."""
    return check_corpus(report, checks, question, root, seed)


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
        ref_fn = getattr(ref, fn, None) or (lambda *a: None)
        for variant in variants_of(fn, ref_fn, seed) + degenerate_variants(fn, ref_fn):
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
            for kind in FREE_KINDS:
                if kind != "zeros" and outcome.get(kind, {}).get(name):
                    weak.append(f"check '{name}' passes a {fn} that only {FREE_WORD[kind]}")
    if weak:
        report.add(FAIL, "checks that cannot fail", weak)
    else:
        report.add(OK, f"every check that reads {', '.join(functions) or 'a function'} fails when "
                       "that function alone returns zeros, None, NaN or its input, or raises" +
                       (", or ignores its upstream gradient" if any("backward" in f for f in functions) else ""))
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
    from backprop_traps.grader.checks import load_question
    from backprop_traps.grader.loading.reference import load_solution
    try:
        checks = load_question(question, root)
    except ModuleNotFoundError:
        report.add(FAIL, f"no hidden checks: write checks/{question}.py (or grader/checks/{question}.py; a "
                         f"package checks/{question}/ with __init__.py, probes.py and traps.py when it needs more)")
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
    failed_by = check_corpus(report, checks, question, root, seed)
    check_no_free_points(report, checks, ref, seed, contract_functions(question, root), failed_by)
    check_variants(report, checks, ref, seed, failed_by)
    from backprop_traps.grader.authoring.boundaries import check_boundaries  # issue 24: kinks and memory paths
    solution_code = graded_code(parse_notebook(solution_path(question, root).read_text(encoding="utf-8")))
    check_boundaries(report, checks, ref, seed, solution_code)
