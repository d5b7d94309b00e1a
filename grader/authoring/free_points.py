"""No free points: answers that do nothing useful must score 0 on every check.

The contract functions are the ones the solution notebook defines in its solution cells
(what a learner writes). From each, five do-nothing answers are made: it returns ``None``,
zeros or NaN shaped like the reference's answer, its own first argument, or it raises.

- the whole answer: every contract function does the same nothing at once; every check
  must then give 0 points (``check_no_free_points``);
- one function at a time (the others right): every check that reads that function's answer
  must fail (``degenerate_variants``, used by ``soundness.check_variants``).

Both run in process on the reference, like the other made-up wrong answers (trusted code).
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np

from backprop_traps.grader.authoring.findings import FAIL, OK, QuestionReport
from backprop_traps.grader.authoring.in_process import InProcessCaller, run_checks
from backprop_traps.grader.authoring.variants import Variant, zeros_like_answer
from backprop_traps.grader.loading.questions import solution_path

KINDS = ("none", "zeros", "nan", "own-input", "raises")
WORDS = {"none": "return None", "zeros": "return zeros", "nan": "return NaN",
         "own-input": "return their own input", "raises": "raise an exception"}
"""What the whole answer's functions do, for validate's lines."""
WORD = {"none": "returns None", "zeros": "returns zeros", "nan": "returns NaN",
        "own-input": "returns its own first argument", "raises": "raises an exception"}
"""What one function does."""


def contract_functions(question: str, root: Path) -> list[str]:
    """The functions the learner writes: top-level ``def``s of the solution notebook's
    solution cells (nbgrader ``solution: true``), in notebook order, and the classes defined
    there (a custom autograd Function: its methods are what the learner writes)."""
    nb = json.loads(solution_path(question, root).read_text(encoding="utf-8"))
    names = []
    for cell in nb.get("cells", []):
        nbgrader = (cell.get("metadata") or {}).get("nbgrader") or {}
        if cell.get("cell_type") != "code" or not nbgrader.get("solution"):
            continue
        source = cell.get("source", "")
        try:
            tree = ast.parse("".join(source) if isinstance(source, list) else source)
        except SyntaxError:
            continue
        names += [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                  and node.name not in names]
    return names


def nan_like_answer(value):
    """NaN where the reference's answer has floats; zeros for integers, False for booleans."""
    if isinstance(value, np.ndarray):
        return np.full_like(value, np.nan) if value.dtype.kind in "fc" else np.zeros_like(value)
    if isinstance(value, tuple):
        return tuple(nan_like_answer(v) for v in value)
    if isinstance(value, list):
        return [nan_like_answer(v) for v in value]
    if isinstance(value, dict):
        return {k: nan_like_answer(v) for k, v in value.items()}
    if isinstance(value, (float, np.floating)):
        return float("nan")
    if isinstance(getattr(value, "data", None), np.ndarray) and value.data.dtype.kind == "f":
        from backprop_traps.grader.authoring.variants import _with_data
        return _with_data(value, np.full_like(value.data, np.nan))  # a tensor
    return zeros_like_answer(value)


def _plain(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, (np.ndarray, np.generic, int, float, complex, str, bytes, type(None)))


def _side_effect_free(args):
    """The arguments for the reference call that shapes a do-nothing answer: objects of the
    question's own (tensors on a tape) are deep copies, so that the reference's side effects
    (a backward() filling .grad) do not happen for an answer that does nothing; arrays and
    numbers go as they are."""
    import copy
    return [a if _plain(a) else copy.deepcopy(a) for a in args]


class FreePointsProbe(RuntimeError):
    """Raised by the ``raises`` answer."""


def degenerate(kind: str, ref_fn):
    """A function like ``ref_fn`` that does the ``kind`` of nothing; for a class, a subclass
    whose own methods (those its body defines) each do it."""
    if isinstance(ref_fn, type):
        methods = {}
        for name, member in vars(ref_fn).items():
            if isinstance(member, staticmethod):
                methods[name] = staticmethod(degenerate(kind, member.__func__))
            elif callable(member) and not name.startswith("__"):
                methods[name] = degenerate(kind, member)
        return type(ref_fn.__name__, (ref_fn,), methods)
    if kind == "none":
        return lambda *args: None
    if kind == "zeros":
        return lambda *args: zeros_like_answer(ref_fn(*_side_effect_free(args)))
    if kind == "nan":
        return lambda *args: nan_like_answer(ref_fn(*_side_effect_free(args)))
    if kind == "own-input":
        return lambda *args: args[0] if args else None

    def raises(*args):
        raise FreePointsProbe("a do-nothing answer made by grade validate")
    return raises


def degenerate_variants(fn_name: str, ref_fn) -> list[Variant]:
    """One function's do-nothing copies, as validate's wrong-answer variants."""
    return [Variant(kind, fn_name, degenerate(kind, ref_fn)) for kind in KINDS]


def check_no_free_points(report: QuestionReport, checks, ref, seed: int, functions: list[str],
                         failed_by: dict[str, set] | None = None) -> None:
    """Every check gives 0 points to a whole answer whose functions all do the same nothing."""
    if not functions:
        report.add(FAIL, "no contract functions found: the solution notebook has no solution cell "
                         "(nbgrader `solution: true`) defining a function")
        return
    free = []
    for kind in KINDS:
        namespace = dict(vars(ref))
        for fn in functions:
            namespace[fn] = degenerate(kind, getattr(ref, fn, None) or (lambda *a: None))
        for r in run_checks(checks, InProcessCaller(namespace), ref, seed):
            if r.points > 0 or r.passed:
                free.append(f"check '{r.name}' gives {r.points:g} of {r.max_points:g} points to an "
                            f"answer whose functions all {WORDS[kind]}")
            elif failed_by is not None:
                failed_by[r.name].add(f"every function: {kind}")
            if r.grader_error:
                free.append(f"check '{r.name}' breaks (grader error) on an answer whose functions all "
                            f"{WORDS[kind]}: {r.feedback.splitlines()[0] if r.feedback else ''}")
    if free:
        report.add(FAIL, "free points: answers that do nothing score more than 0", free)
    else:
        report.add(OK, f"no free points: answers whose {len(functions)} functions return None, zeros, "
                       "NaN or their own input, or raise, score 0 on every check")
