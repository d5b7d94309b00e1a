"""Downstream functions judged on their own (issue 38, item 1): a mistake in a learner's
upstream function must never be blamed on the downstream function that calls it.

Several questions ask for a function that the reference builds on another one the learner also
writes: ``mixed_precision_step`` calls ``adamw_step``, ``amp_step`` calls ``clip_grad_norm``,
``accumulated_grads`` calls ``mlp_grads``. A hidden check of the downstream function compares
it with the *reference's* downstream function, built from the reference's upstream one; so a
learner whose downstream code is right but whose upstream function is wrong fails it, and the
diagnosis (a trap's name, "float32 where the contract wants float64") would blame code that is
right. Which functions call which is read from the solution notebook's own code (its solution
cells), so every question, a new one included, is covered without a declaration.

When a check that called a downstream function ``D`` fails, ``explain``:

1. runs the reference's ``D`` on the inputs of the learner's last call of ``D`` in that check,
   recording what it hands each upstream function ``U`` and what ``U`` answers;
2. calls the learner's ``U`` (in the sandbox) on those same inputs. If every answer is the
   reference's, the upstream function is not the cause and the check's own feedback stands;
3. otherwise builds the reference's ``D`` again with the learner's ``U`` in place of the
   reference's (each call of ``U`` crosses to the sandbox as data: no learner code runs here,
   and each answer must have the form of the reference's ``U``'s before the reference computes
   with it, an integer within the sizes of the call's inputs: engine/learner_values.py)
   and compares the learner's ``D`` with that reference built from their own ``U``. The
   feedback says so, names ``U`` as what to fix, and names no trap and no dtype for ``D``.

The points never change (the check still wants the reference's answer): only what the learner
is told. A trap the check named stays only when the downstream function is right given the
learner's upstream one and an earlier check of the upstream function named the same trap (it
is then the upstream function's mistake, told truly). Anything that goes wrong here leaves the
check's own feedback as it was.
"""
from __future__ import annotations

import ast
import functools
import re
import types
from pathlib import Path

import numpy as np

from backprop_traps.grader.engine.learner_values import NotAdmitted, admit
from backprop_traps.grader.engine.question import Fail
from backprop_traps.grader.engine.search_budget import SearchBudget

MAX_VALUES = 1_000_000
"""Inputs larger than this many numbers are not replayed (a memory check's batch)."""
MAX_UPSTREAM_CALLS = 4
"""At most this many of the reference's calls of each upstream function are replayed in the
learner's code."""
MAX_KINDS = 8
"""Besides those, the first call of each of this many kinds (its string and None arguments: an
op's name, a missing operand) is replayed, so a mistake in one rarely used branch (tape_autodiff's
``log``, called once deep in a graph) is found too."""
ROUNDING_UNITS = 32
"""An upstream answer in float32 or float16 counts as wrong only beyond this many rounding
units of its dtype (relative): a right answer computed in another order stays far inside."""


@functools.lru_cache(maxsize=None)
def _dependencies(path: str) -> dict[str, tuple[str, ...]]:
    """{D: (U, ...)}: the learner's functions (defined in the solution cells) that each one calls,
    directly or through another of them, in the solution notebook at ``path``."""
    from backprop_traps.grader.loading.notebook import cell_source, parse_notebook
    nb = parse_notebook(Path(path).read_text(encoding="utf-8"))
    defs: dict[str, ast.FunctionDef] = {}
    for cell in nb["cells"]:
        meta = ((cell.get("metadata") or {}).get("nbgrader") or {}) if isinstance(cell, dict) else {}
        if cell.get("cell_type") != "code" or not meta.get("solution"):
            continue
        try:
            tree = ast.parse(cell_source(cell))
        except SyntaxError:
            continue
        defs.update({n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)})
    direct = {name: {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call)
                     and isinstance(c.func, ast.Name) and c.func.id in defs and c.func.id != name}
              for name, node in defs.items()}
    closed = {}
    for name in direct:
        seen, todo = set(), list(direct[name])
        while todo:
            callee = todo.pop()
            if callee not in seen and callee != name:
                seen.add(callee)
                todo.extend(direct.get(callee, ()))
        if seen:
            closed[name] = tuple(sorted(seen))
    return closed


def dependencies_of(solution: str | Path) -> dict[str, tuple[str, ...]]:
    """The learner's functions that call others of them, in the solution notebook ``solution``
    ({} when none, or when it cannot be read)."""
    try:
        return _dependencies(str(solution))
    except Exception:  # noqa: BLE001 (no solution to read: nothing is downstream)
        return {}


def _size(value) -> int:
    if isinstance(value, np.ndarray):
        return value.size
    if isinstance(value, (list, tuple)):
        return sum(_size(v) for v in value)
    if isinstance(value, dict):
        return sum(_size(v) for v in value.values())
    return 1


def _rebound(ref_fn, replacements: dict):
    """``ref_fn`` with the names in ``replacements`` rebound, for it and for every reference
    function it reaches through its globals (so a call through a helper is replaced too)."""
    original = ref_fn.__globals__
    namespace = dict(original)
    for name, value in original.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is original:
            namespace[name] = types.FunctionType(value.__code__, namespace, value.__name__,
                                                 value.__defaults__, value.__closure__)
    namespace.update(replacements)
    return namespace[ref_fn.__name__]


class _Refused(Exception):
    """The learner's upstream function did not answer a replayed call."""


def _same(got, want) -> bool:
    """Whether ``got`` is ``want``: item by item, flags (``found_inf``) equal, numbers and arrays
    close (to float64's tolerance, or to ``ROUNDING_UNITS`` of a float32 or float16 ``want``'s
    dtype), with inf and NaN where ``want`` has them (a replayed answer may rightly hold them)."""
    if isinstance(want, (tuple, list)):
        return (isinstance(got, (tuple, list)) and len(got) == len(want)
                and all(_same(g, w) for g, w in zip(got, want)))
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    if isinstance(want, (bool, np.bool_)) or isinstance(got, (bool, np.bool_)):
        return isinstance(got, (bool, np.bool_)) and isinstance(want, (bool, np.bool_)) and bool(got) == bool(want)
    if want is None or isinstance(want, (str, bytes)):
        return got == want
    try:
        g, w = np.asarray(got), np.asarray(want)
    except Exception:  # noqa: BLE001
        return False
    if g.shape != w.shape or g.dtype.kind not in "fiuc" or w.dtype.kind not in "fiuc":
        return False
    if w.dtype.kind in "iu" and g.dtype.kind in "iu":
        return bool(np.array_equal(g, w))
    narrow = w.dtype.kind == "f" and w.dtype.itemsize < 8
    rtol = ROUNDING_UNITS * float(np.finfo(w.dtype).eps) if narrow else 1e-6
    with np.errstate(all="ignore"):
        g64, w64 = g.astype(np.complex128 if "c" in g.dtype.kind + w.dtype.kind else np.float64), \
            w.astype(np.complex128 if "c" in g.dtype.kind + w.dtype.kind else np.float64)
        return bool(np.allclose(g64, w64, rtol=rtol, atol=1e-12 if narrow else 1e-8, equal_nan=True)
                    and np.array_equal(np.isinf(g64), np.isinf(w64)))


def explain(ctx, failure: Fail) -> Fail | None:
    """A truer ``Fail`` for ``failure`` when a downstream function the check called failed
    because of the learner's upstream function (see the module docstring); else None. Also
    remembers, for the grading, which traps a failure named on which function."""
    try:
        told = _explain(ctx, failure)
    except Exception:  # noqa: BLE001 (an extra: the check's own verdict and feedback stand)
        told = None
    _remember(ctx, told or failure)
    return told


def _named(ctx) -> dict:
    """{function: traps named on it by a failure so far}, kept for one grading (on its caller)."""
    caller = getattr(ctx, "sandbox", None)
    if caller is None:
        return {}
    named = getattr(caller, "upstream_traps", None)
    if named is None:
        named = {}
        try:
            caller.upstream_traps = named
        except AttributeError:
            return {}
    return named


def _remember(ctx, failure: Fail) -> None:
    if failure.trap:
        for fn in re.findall(r"from (\w+)", failure.feedback):
            _named(ctx).setdefault(fn, set()).add(failure.trap)


def _explain(ctx, failure: Fail) -> Fail | None:
    calls = getattr(ctx, "downstream_calls", None)
    if not calls:
        return None
    deps = ctx.question_dependencies()
    for fn, (args, answer, answered) in reversed(list(calls.items())):
        named = fn in failure.feedback or fn in ctx.check_name
        if not named or fn not in deps or _size(args) > MAX_VALUES:
            continue
        if answered is not True and answered != "exception":
            return None  # not written yet, missing or out of time: its own failure, whatever it calls
        with SearchBudget(ctx.sandbox) as budget:  # inside the submission's budget, and charged to it
            found = _upstream_wrong(ctx, fn, deps[fn], args, budget)
            if found is None:
                continue
            upstream, sentence = found
            kept = failure.trap if failure.trap in _named(ctx).get(upstream, ()) else None
            rebuilt = _told(ctx, fn, upstream, sentence, args, answer, budget, kept) if answered is True else None
        told = rebuilt or (
            f"This check compares {fn} with the reference's, which is built from the reference's "
            f"{upstream}, and {sentence}. With it, your {fn} did not answer: "
            f"{failure.feedback.rstrip('.')}. Fix {upstream} first (its own checks), then grade again.")
        return Fail(told, kept if "is right as it is" in told else None, hints=(
            f"Which checks of {upstream} fail? This one cannot pass before they do.",
            f"{fn} builds on {upstream}: get {upstream} right first, then grade again; this check "
            f"then says what, if anything, is left in {fn}."))
    return None


def _upstream_wrong(ctx, fn: str, upstreams, args, budget):
    """(U, what was wrong) for the first of the learner's upstream functions ``upstreams`` that
    answers a call the reference's ``fn`` makes on ``args`` differently; None if every one agrees."""
    ref_fn = getattr(ctx.ref, fn)
    seen: list[tuple[str, tuple, object]] = []

    def recorder(name):
        ref_upstream = getattr(ctx.ref, name)

        def record(*a):
            value = ref_upstream(*a)
            seen.append((name, a, value))
            return value
        return record
    _rebound(ref_fn, {u: recorder(u) for u in upstreams})(*args)
    replayed: dict[str, int] = {}
    kinds: dict[str, set] = {}
    for name, a, want in seen:
        kind = _kind(a)
        new_kind = kind not in kinds.setdefault(name, set()) and len(kinds[name]) < MAX_KINDS
        kinds[name].add(kind)
        if not new_kind:
            replayed[name] = replayed.get(name, 0) + 1
        if (not new_kind and replayed[name] > MAX_UPSTREAM_CALLS) or name in getattr(ctx.sandbox, "gave_up", {}):
            continue
        if budget.over():
            return None  # feedback must not cost the learner points: stay inside the time budget
        result = ctx.sandbox.call(name, *a)
        if not result.ok:
            return name, f"your {name} did not answer the call {fn} makes: {result.error}"
        if not _same(result.value, want):
            return name, f"your {name} answers differently from the reference's on the inputs {fn} hands it"
    return None


def _kind(args) -> tuple:
    """What selects a branch of an upstream function: its string and None arguments."""
    return tuple(a if isinstance(a, str) or a is None else "" for a in args)


def _told(ctx, fn: str, upstream: str, sentence: str, args, answer, budget, trap: str | None = None) -> str:
    """The feedback: upstream first, then how ``fn`` compares with a reference built from the
    learner's own upstream function."""
    head = (f"This check compares {fn} with the reference's, which is built from the reference's "
            f"{upstream}, and {sentence}. ")

    reference = getattr(ctx.ref, upstream)

    def yours(*a):
        if budget.over():
            raise _Refused("out of the time feedback may take")
        result = ctx.sandbox.call(upstream, *a)
        if not result.ok:
            raise _Refused(result.error)
        # held to the reference's own answer before the grader computes with it (learner_values)
        return admit(result.value, reference(*a), (a, args))
    try:
        rebuilt = _rebound(getattr(ctx.ref, fn), {upstream: yours})(*args)
    except NotAdmitted as why:
        return (head + f"A reference cannot be built from your own {upstream}: {why}, so the grader does "
                f"not compute with it and nothing is said about {fn} itself: fix {upstream} first (its own "
                "checks), then grade again.")
    except Exception:  # noqa: BLE001 (the learner's upstream answer breaks the reference)
        return (head + f"A reference built from your own {upstream} cannot be computed here, so "
                f"nothing is said about {fn} itself: fix {upstream} first (its own checks), then grade again.")
    if _same(answer, rebuilt):
        named = (f" Its checks named the mistake: {ctx.question.trap(trap).what_is_wrong}" if trap else "")
        # on this input only: a mistake of fn's own that this input does not reach may remain
        return (head + f"Built from your own {upstream} instead, the reference gives exactly what your "
                f"{fn} returned: {fn} is right as it is on this input, and the difference comes from "
                f"{upstream}. Fix {upstream} (its own checks say how), then grade again.{named}")
    return (head + f"Compared with a reference built from your own {upstream}, your {fn} still "
            f"differs, so {fn} has a mistake of its own too. Fix {upstream} first (its own checks), "
            f"then grade again: this check will then say what {fn} gets wrong.")
