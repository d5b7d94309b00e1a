"""The files half of ``grade validate``: placeholders, the stub, the notebooks, the kernels.

- no ``SCAFFOLD:`` placeholder from ``grade new`` is left in the question's files;
- the stub is what ``grade release`` generates and leaks no solution line or hidden check;
- both notebooks execute in a real Jupyter kernel: the solution clean, the stub to its
  end as Run All runs it (its visible tests fail with NotImplementedError and do not stop it);
- the kernels agree with the solution under the Numba CUDA simulator: the question's
  ``tests/kernels/test_<id>_kernels.py`` runs with pytest in a subprocess, or, without
  one, the kernel module's ``validate_kernels()`` hook. A question with no kernels says
  why in its solution notebook's metadata, ``backprop_traps.no_kernels``.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from backprop_traps.grader.authoring.findings import FAIL, FILL, OK, QuestionReport
from backprop_traps.grader.loading.questions import REPO_ROOT, exercise_path, solution_path

PLACEHOLDER = "SCAFFOLD:"
_SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def checks_module_path(question: str, root: Path) -> Path:
    """The checks module, or the folder of a checks package (``checks/<id>/``), in the
    questions folder first, then in this kit."""
    for base in (root / "checks", REPO_ROOT / "grader" / "checks"):
        for path in (base / f"{question}.py", base / question):
            if path.exists():
                return path
    return REPO_ROOT / "grader" / "checks" / f"{question}.py"


def checks_files(question: str, root: Path) -> list[Path]:
    """The checks module, or every module of a checks package."""
    path = checks_module_path(question, root)
    return sorted(path.glob("*.py")) if path.is_dir() else [path]


def kernel_test_path(question: str, root: Path) -> Path:
    return root / "tests" / "kernels" / f"test_{question}_kernels.py"


def question_test_path(question: str, root: Path) -> Path:
    """The question's own test: in tests/questions/ where the tests are grouped by room (this
    kit), else in tests/ (a questions folder of an author's own)."""
    grouped = root / "tests" / "questions"
    return (grouped if grouped.is_dir() else root / "tests") / f"test_{question}.py"


def question_files(question: str, root: Path) -> list[Path]:
    """Every file of a question that ``grade new`` writes, where it exists."""
    files = [solution_path(question, root), *checks_files(question, root),
             root / "kernels" / f"{question}.py", kernel_test_path(question, root),
             question_test_path(question, root)]
    answers = root / "tests" / "answers" / question
    files += sorted(answers.glob("*.py")) if answers.is_dir() else []
    return [f for f in files if f.is_file()]


def _shown(path: Path, root: Path) -> str:
    for base in (root, REPO_ROOT):
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return str(path)


def check_placeholders(report: QuestionReport, question: str, root: Path) -> bool:
    """One FILL line per placeholder left; returns whether the question is filled in."""
    import nbformat
    left = []
    for path in question_files(question, root):
        if path.suffix == ".ipynb":
            nb = nbformat.read(str(path), as_version=4)
            units = [(f"cell {i}", c.source) for i, c in enumerate(nb.cells)]
        else:
            units = [("", path.read_text(encoding="utf-8"))]
        for where, text in units:
            for n, line in enumerate(text.splitlines(), 1):
                if PLACEHOLDER in line:
                    place = f"{where}, line {n}" if where else f"line {n}"
                    note = re.sub(r"""["']+\)?\s*$""", "", line.split(PLACEHOLDER, 1)[1]).strip()
                    left.append(f"{_shown(path, root)} ({place}): {note}")
    for item in left:
        report.add(FILL, item)
    return not left


def _stub_lines(question: str, root: Path) -> set[str]:
    import nbformat
    nb = nbformat.read(str(exercise_path(question, root)), as_version=4)
    return {ln.strip() for c in nb.cells for ln in c.source.splitlines()}


def code_lines(path: Path) -> set[str]:
    """The module's lines of code (over 30 characters), without its comments and strings:
    prose shared with the notebook (a formula in a docstring) is no leak."""
    import io
    import tokenize
    text = path.read_text(encoding="utf-8")
    prose = {tokenize.STRING, tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
             tokenize.DEDENT, tokenize.ENDMARKER}
    try:
        rows = {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                if tok.type not in prose}
    except (tokenize.TokenError, SyntaxError):
        rows = set(range(1, text.count("\n") + 2))
    lines = text.splitlines()
    return {lines[r - 1].strip() for r in rows if r <= len(lines) and len(lines[r - 1].strip()) > 30}


def check_stub_files(report: QuestionReport, question: str, root: Path) -> None:
    """Fresh (what release generates) and leak-free."""
    from backprop_traps.grader.authoring.release import release
    stub = exercise_path(question, root)
    stale = release(question, root, check=True)
    if stale:
        report.add(FAIL, f"stale stub: {_shown(stub, root)} is not what {_shown(solution_path(question, root), root)} "
                         "generates (or its hidden-checks cell is out of date): run `grade release`")
    else:
        report.add(OK, "the stub is what `grade release` generates")
    if not stub.is_file():
        return
    import nbformat
    text = stub.read_text(encoding="utf-8")
    lines = _stub_lines(question, root)
    leaks = [m for m in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS") if m in text]
    solution = nbformat.read(str(solution_path(question, root)), as_version=4)
    for cell in solution.cells:
        for body in _SOLUTION.findall(cell.source):
            leaks += [f"solution line: {ln.strip()}" for ln in body.splitlines()
                      if len(ln.strip()) > 25 and ln.strip() in lines]
    for checks in checks_files(question, root):
        if checks.is_file():
            leaks += [f"hidden-check line: {ln}" for ln in sorted(code_lines(checks) & lines)]
    if leaks:
        report.add(FAIL, f"the stub leaks the solution or a hidden check ({_shown(stub, root)})", leaks)
    else:
        report.add(OK, "the stub leaks no solution line or hidden check")


def execute(path: Path, workdir: str, root: Path, skip_demos: bool = False):
    """Run a notebook top to bottom in a fresh Python 3 kernel, as Jupyter's Run All does
    (cells tagged ``raises-exception`` do not stop it); returns (the executed notebook, the
    error that stopped it or None). The kernel is told the questions folder, for the
    hidden-checks cell; ``skip_demos`` leaves out the demo cells ("Grade it" among them)."""
    import nbformat
    from backprop_traps.grader.authoring.notebook_client import notebook_client
    from nbclient.exceptions import CellExecutionError
    nb = nbformat.read(str(path), as_version=4)
    env = dict(os.environ, BACKPROP_TRAPS_QUESTIONS=str(root))
    extra = {"skip_cells_with_tag": "demo"} if skip_demos else {}
    try:
        notebook_client(nb, timeout=180, kernel_name="python3",
                       resources={"metadata": {"path": workdir}}, **extra).execute(
            env=env, stderr=subprocess.DEVNULL)  # the kernel's own log lines are noise here
    except CellExecutionError as err:
        return nb, err
    return nb, None


def raised(cell) -> str | None:
    """The name of the exception a cell's outputs show, if it raised."""
    return next((o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def check_notebooks(report: QuestionReport, question: str, root: Path) -> None:
    from backprop_traps.grader.authoring.stub_layout import is_visible_test
    solution, stub = solution_path(question, root), exercise_path(question, root)
    with tempfile.TemporaryDirectory(prefix="bpt-validate-") as work:
        _, err = execute(solution, work, root)
        if err is not None:
            report.add(FAIL, f"the solution does not run clean in a kernel: {err.ename}: {err.evalue}",
                       [_last_lines(str(err))])
        else:
            report.add(OK, "the solution runs clean in a Jupyter kernel")
        if not stub.is_file():
            return
        ran, err = execute(stub, work, root, skip_demos=True)
        tests = [raised(c) for c in ran.cells if is_visible_test(c)]
        if err is not None:
            report.add(FAIL, f"Run All stops in the stub at {err.ename}: {err.evalue}, before the grade "
                             "cell (tag every code cell `raises-exception`: `grade release` does)",
                       [_last_lines(str(err))])
        elif tests and tests[0] != "NotImplementedError":
            report.add(FAIL, f"the stub's first visible test fails with {tests[0] or 'nothing'}, "
                             "not NotImplementedError")
        else:
            report.add(OK, "Run All goes through the stub to its grade cell; its visible tests stop at "
                           "NotImplementedError")


def _last_lines(text: str, n: int = 6) -> str:
    lines = [ln for ln in re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines() if ln.strip()]
    return "\n".join(lines[-n:])


def start_kernel_check(question: str, root: Path):
    """Start the kernel check in a subprocess; ``finish_kernel_check`` collects it."""
    tests, module = kernel_test_path(question, root), root / "kernels" / f"{question}.py"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", BACKPROP_TRAPS_QUESTIONS=str(root),
               PYTHONDONTWRITEBYTECODE="1")
    if tests.is_file():
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)]
        if importlib.util.find_spec("xdist") is not None:
            cmd[4:4] = ["-n", "0"]  # one small file: no worker processes (the repo's addopts ask for them)
        what = _shown(tests, root)
    elif module.is_file() and "def validate_kernels" in module.read_text(encoding="utf-8"):
        cmd = [sys.executable, "-c", "import importlib.util, sys; spec = importlib.util."
               "spec_from_file_location('kernels_under_test', sys.argv[1]); m = importlib.util."
               "module_from_spec(spec); spec.loader.exec_module(m); m.validate_kernels()", str(module)]
        what = f"{_shown(module, root)}: validate_kernels()"
    else:
        reason = no_kernels_reason(question, root)
        if reason:
            return OK, f"no kernels, on purpose: {reason}"
        return None, (f"no kernel tests: add {_shown(tests, root)} (or validate_kernels() in "
                      f"{_shown(module, root)}, or, if no kernel makes sense, say why in the solution "
                      "notebook's metadata: backprop_traps.no_kernels)")
    proc = subprocess.Popen(cmd, cwd=str(root), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return proc, what


def no_kernels_reason(question: str, root: Path) -> str:
    """Why the question has no kernels, from its solution notebook's metadata ('' if it has no say)."""
    import nbformat
    nb = nbformat.read(str(solution_path(question, root)), as_version=4)
    return str((nb.metadata.get("backprop_traps") or {}).get("no_kernels") or "").strip()


def finish_kernel_check(report: QuestionReport, started) -> None:
    proc, what = started
    if proc is None or proc == OK:
        report.add(FAIL if proc is None else OK, what)
        return
    try:
        out, _ = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        report.add(FAIL, f"the kernel check ({what}) did not finish in 10 minutes")
        return
    tail = _last_lines(out, 1)
    if proc.returncode == 0:
        report.add(OK, f"the kernels agree with the solution under the simulator ({what}: {tail})")
    else:
        report.add(FAIL, f"the kernels disagree with the solution, or their check fails ({what})",
                   [_last_lines(out, 12)])
