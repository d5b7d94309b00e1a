"""What a hidden check works with: seeded inputs, the reference, and the learner's calls.

The grader process holds the reference and does every comparison; the learner's
functions are only ever called through the sandbox. Helpers here raise ``Fail`` with
feedback a learner can act on (what was wrong, a small example when one helps).
"""
from __future__ import annotations

import zlib

import numpy as np

from backprop_traps.grader.engine import feedback, gradcheck
from backprop_traps.grader.engine.dtypes import low_precision, precision_note  # noqa: F401 (checks import them here)
from backprop_traps.grader.engine.question import Fail, Question
from backprop_traps.grader.sandbox.process import Sandbox

from backprop_traps.grader.engine.sameness import ATOL, RTOL, _fmt, same_answer, unchanged  # noqa: F401 (checks import them here)


def first_non_finite(got: np.ndarray, expected) -> str:
    """Where the first NaN or infinity of ``got`` is, and what belongs there (every failing
    comparison says where the values differ)."""
    at = np.unravel_index(int(np.argmin(np.isfinite(got).ravel())), got.shape)
    want = np.asarray(expected)[at] if np.shape(expected) == got.shape else None
    where = f"[{', '.join(str(int(i)) for i in at)}]" if at else "(a scalar)"
    try:
        wanted = f", where {float(want):.6g} is expected" if want is not None else ""
    except (TypeError, ValueError):
        wanted = ""
    return f" (the first is {got[at]} at {where}{wanted})"


class CheckContext:
    """Handed to each check: ``rng``, ``ref`` (the solution's functions), ``call``, helpers."""

    def __init__(self, question: Question, sandbox: Sandbox, ref, seed: int, check_name: str):
        self.question = question
        self.sandbox = sandbox
        self.ref = ref
        self.seed = seed
        self.check_name = check_name
        # Per-check stream: a check's inputs do not depend on which checks ran before it.
        self.rng = np.random.default_rng([seed, zlib.crc32(check_name.encode())])
        self.last_calls: dict = {}
        """fn -> the arguments of the learner's last call of it in this check (engine/shrink.py)."""
        self.output_names: dict = {}
        """fn -> the names of its outputs, as the check unpacked them."""
        self.downstream_calls: dict = {}
        """fn -> (args, answer) of the learner's last call of each function that builds on
        another of theirs (``upstream``): a failure is then told truly (``upstream.explain``)."""
        self._dependencies = None

    def question_dependencies(self) -> dict:
        """{D: (U, ...)}: the learner's functions that call others of them (from the solution
        notebook's code; grader/engine/upstream.py). Read without loading the reference."""
        if self._dependencies is None:
            from backprop_traps.grader.engine import upstream
            where = getattr(self.ref, "solution_path", None)
            if where is None:  # a loaded namespace: its functions were compiled from the solution
                code = next((getattr(v, "__code__", None) for v in vars(self.ref).values()
                             if getattr(v, "__code__", None) is not None), None) if hasattr(self.ref, "__dict__") else None
                where = code.co_filename if code is not None else None
            self._dependencies = upstream.dependencies_of(where) if where else {}
        return self._dependencies

    # -- calling the learner ----------------------------------------------------------
    def service(self, name: str, *args):
        """Run the grader-side service ``name`` (see ``Question.services``) here, in the grader."""
        return self.sandbox.services[name](*args)

    def harness(self, fn: str, *args, key: str | None = None):
        """``fn(*args)`` in the question's source harness (``Question.source_harness``): the
        grader's own child, where none of the learner's code ran; a ``CallResult`` whose kind
        "harness" is the grader's failure. ``key`` names a call not tried again after a timeout.
        Without that child (in process: ``grade validate``) the caller's own ``fn`` answers."""
        child = getattr(self.sandbox, "source_child", None)
        return child.call(fn, *args, key=key) if child is not None else self.sandbox.call(fn, *args)

    def harness_ready(self):
        """The source harness's readiness (a ``CallResult``), or None where there is none."""
        child = getattr(self.sandbox, "source_child", None)
        return child.ready() if child is not None else None

    def call(self, fn: str, *args, echo_args: bool = False, measure_memory: bool = False):
        """The learner's ``fn(*args)``; a failure to answer becomes ``Fail`` with why."""
        result = self.sandbox.call(fn, *args, echo_args=echo_args, measure_memory=measure_memory)
        if sum(np.size(a) for a in args if isinstance(a, np.ndarray)) <= 1 << 20:
            self.last_calls[fn] = args  # for the failure path: where, and the smallest input
        if fn in self.question_dependencies():
            self.downstream_calls.pop(fn, None)  # the latest call last; None: it did not answer
            self.downstream_calls[fn] = (args, result.value if result.ok else None,
                                         True if result.ok else getattr(result, "kind", "exception"))
        if not result.ok:
            raise Fail(result.error)
        if echo_args or measure_memory:
            return result
        return result.value

    def meanwhile(self, work, *args):
        """Start the grader's own ``work(*args)`` (a reference at a measured call's size) on
        another core while the learner's child computes; returns a function that gives its
        result. Where the learner's code runs in this process (``grade validate``), a measured
        call would count it: it runs here, first."""
        if getattr(self.sandbox, "shares_this_process", False):
            done = work(*args)
            return lambda: done
        import contextvars
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(1)
        future = pool.submit(contextvars.copy_context().run, work, *args)  # numpy's errstate too
        pool.shutdown(wait=False)
        return future.result

    def unpack(self, value, count: int, fn: str, names: str):
        """Check that ``fn`` returned a tuple/list of ``count`` items."""
        if not isinstance(value, (tuple, list)) or len(value) != count:
            got = f"a {type(value).__name__}" if not isinstance(value, (tuple, list)) else f"{len(value)} values"
            raise Fail(f"{fn} must return {count} values ({names}), but returned {got}")
        self.output_names[fn] = [n.strip() for n in names.split(",")]
        return value

    # -- comparing --------------------------------------------------------------------
    def as_array(self, name: str, got, expected: np.ndarray, fn: str, integer: bool = False) -> np.ndarray:
        """``got`` as an array of ``expected``'s shape, or ``Fail`` saying what is off."""
        if isinstance(got, (int, float)) and np.ndim(expected) == 0:
            got = np.asarray(got)
        if not isinstance(got, np.ndarray):
            raise Fail(f"{fn} must return `{name}` as a numpy array, but it returned {type(got).__name__}")
        if got.shape != np.shape(expected):
            if got.ndim == np.ndim(expected) and sorted(got.shape) == sorted(np.shape(expected)):
                raise Fail(f"`{name}` from {fn} has shape {got.shape}, expected {np.shape(expected)}: the "
                           "same axes in another order (transposed?)")
            if got.size == np.size(expected) and [d for d in got.shape if d != 1] == [
                    d for d in np.shape(expected) if d != 1]:  # keepdims, or a squeeze too many
                raise Fail(f"`{name}` from {fn} has shape {got.shape}, expected {np.shape(expected)}: the "
                           "same number of values, with an axis of length 1 more or fewer", settled=True)
            raise Fail(f"`{name}` from {fn} has shape {got.shape}, expected {np.shape(expected)}")
        if integer and got.dtype.kind not in "iu":
            raise Fail(f"`{name}` from {fn} must hold integers (int64 indices), not {got.dtype}")
        if not integer and got.dtype.kind not in "fiub":
            raise Fail(f"`{name}` from {fn} has dtype {got.dtype}; expected "
                       f"{self.question.contract_dtype(fn, name)} numbers")
        if got.dtype.kind == "f" and not np.all(np.isfinite(got)):
            bad = int(np.sum(~np.isfinite(got)))
            narrow = self.dtype_note(name, got, fn)
            raise Fail(f"`{name}` from {fn} has {bad} NaN or infinite entries" + first_non_finite(got, expected)
                       + (f". {narrow}" if narrow else ""))
        return got

    def dtype_note(self, name: str, got, fn: str, expected=None) -> str | None:
        """What the answer's dtype says, against the contract's dtype for this output
        (``Question.contract_dtype``): narrower than the contract (``low_precision``); None
        when the dtype explains nothing."""
        return low_precision(name, got, fn, expected, self.question.contract_dtype(fn, name))

    def close(self, got, expected, rtol: float = RTOL, atol: float = ATOL) -> bool:
        return bool(np.allclose(np.asarray(got, dtype=np.float64), expected, rtol=rtol, atol=atol))

    def expect_array(self, name: str, got, expected: np.ndarray, fn: str,
                     traps: dict[str, np.ndarray] | None = None, integer: bool = False,
                     example=None, rtol: float = RTOL, atol: float = ATOL,
                     regions: dict | None = None, counts: dict | None = None) -> np.ndarray:
        """``got`` must match ``expected``; else name the matching trap, if any, and fail.

        ``example`` (text, or a callable giving text or None, run only on failure) and
        ``regions`` (see ``where_differs``) enrich the feedback."""
        got = self.as_array(name, got, expected, fn, integer=integer)
        if integer:
            same = np.array_equal(got, expected)
        else:
            same = self.close(got, expected, rtol, atol)
        if same:
            return self._contract_dtype(name, got, fn)
        raise self.mismatch(name, got, expected, fn, traps, example, regions, counts)

    def _contract_dtype(self, name: str, got, fn: str):
        """A right answer in a float dtype narrower than the contract's still fails: the dtype
        the contract states is part of the answer (a float32 ``dx`` passes a 1e-6 tolerance, and
        halves the precision of everything downstream)."""
        wants = self.question.contract_dtype(fn, name)
        if low_precision(name, got, fn, None, wants):
            raise Fail(f"`{name}` from {fn} is {got.dtype} where the contract wants {wants}: its values "
                       f"agree within the tolerance, but the dtype is part of the answer. Compute in "
                       f"{wants}, or return .astype(np.{wants}).")
        return got

    def mismatch(self, name: str, got, expected, fn: str, traps: dict | None = None,
                 example=None, regions: dict | None = None, counts: dict | None = None,
                 trap: str | None = None) -> Fail:
        """Build the ``Fail`` for a wrong array: a trap's explanation when one matches, by what
        factor it is off when it is a multiple of the right value (``counts`` names the sizes
        that factor may be, see ``feedback.describe_factor``), where the differences lie
        (``regions``), and a small example. ``trap`` names the mistake outright (a check that
        recognised it by its behaviour rather than by equality with a wrong value)."""
        if example is None:  # the smallest input that still fails, where the question says how
            example = self._smallest(fn, name)
        narrow = self.dtype_note(name, got, fn, expected)
        if narrow:  # the dtype is what is wrong: no trap's name, whatever the values look like
            return Fail(narrow + self._details(name, got, expected, example, regions))
        trap = trap or self.match_trap(got, traps or {})
        extra = self._details(name, got, expected, example, regions)
        factor = self.factor_sentence(name, got, expected, counts)
        if factor:
            factor = factor.replace(f"`{name}`", f"`{name}` from {fn}", 1)
        where = self.locate(name, got, expected)
        extra = (f"\n{where}" if where else "") + extra
        if trap is not None:
            what = f"{factor} " if factor else f"`{name}` from {fn} is wrong. "
            return Fail(f"{what}{self.question.trap(trap).explanation}{extra}", trap)
        if factor:
            return feedback.located(Fail(factor + extra), where)
        rounding = (precision_note(name, got, fn, expected)
                    if str(np.asarray(got).dtype) == self.question.contract_dtype(fn, name) else None)
        head = f"`{name}` from {fn} is wrong." + (f" {rounding}" if rounding else "")
        return feedback.located(Fail(head + extra), where)

    def _reference_output(self, fn: str, name: str):
        """The reference's ``name`` output of ``fn`` on the learner's last call of it, for a
        gradient check that gave no reference: where the answer differs. None if unknown."""
        args, outputs = self.last_calls.get(fn), self.output_names.get(fn)
        if args is None or not outputs or name not in outputs:
            return None
        try:
            value = getattr(self.ref, fn)(*args)
            return np.asarray(value[outputs.index(name)], dtype=np.float64)
        except Exception:  # noqa: BLE001 (an extra)
            return None

    def _smallest(self, fn: str, name: str):
        """The example builder for a failure of output ``name`` of ``fn`` (engine/shrink.py)."""
        if not (self.question.shrink and fn in self.question.shrink):
            return None
        from backprop_traps.grader.engine import shrink
        return lambda: shrink.smallest(self, fn, name)

    def locate(self, name: str, got, expected) -> str | None:
        """Where ``got`` differs from ``expected``, by how much, along the question's own axis
        names (``Question.axes``); see ``feedback.locate``. Never raises."""
        try:
            axes = (self.question.axes or {}).get(name.split("[", 1)[0])
            return feedback.locate(name, got, expected, axes)
        except Exception:  # noqa: BLE001 (an extra)
            return None

    def match_trap(self, got, candidates: dict) -> str | None:
        """The id of the first known-wrong answer that ``got`` equals, if any. A trap's value
        may be one array or a list of arrays (several forms of the same mistake)."""
        for trap_id, wrongs in candidates.items():
            for wrong in (wrongs if isinstance(wrongs, list) else [wrongs]):
                if wrong is not None and np.shape(got) == np.shape(wrong) and self.close(got, wrong):
                    return trap_id
        return None

    def _as_array_or_trap(self, name, got, expected, fn, traps, integer=False) -> np.ndarray:
        """``as_array``, but a wrongly shaped answer that equals a trap (a transposed ``dW``, an
        unreduced ``db``) is named by that trap rather than reported as a bare shape error."""
        try:
            return self.as_array(name, got, expected, fn, integer=integer)
        except Fail as fail:
            if fail.settled:
                raise
            trap = self.match_trap(got, traps or {}) if isinstance(got, np.ndarray) else None
            if trap is None:
                raise
            raise Fail(f"{fail.feedback}. {self.question.trap(trap).explanation}", trap) from None

    def example(self, inputs: dict, expected, got) -> str:
        """A small failing example for the feedback: input, expected, got."""
        def hang(label, text):  # a matrix's later rows under its first: "[[1 2]\n [3 4]]"
            return label + text.replace("\n", "\n" + " " * len(label))
        lines = [hang(f"  {k} = ", _fmt(v) if isinstance(v, np.ndarray) else repr(v)) for k, v in inputs.items()]
        lines += [hang("  expected: ", _fmt(expected)), hang("  got:      ", _fmt(got))]
        return "A small example:\n" + "\n".join(lines)

    def expect_gradient(self, name: str, got, f, x: np.ndarray, dout: np.ndarray, fn: str,
                        traps: dict[str, np.ndarray] | None = None, example=None,
                        reference: np.ndarray | None = None, regions: dict | None = None,
                        counts: dict | None = None, rows: bool = False):
        """``got`` must be the gradient of ``<dout, f(x)>`` (finite differences of the reference).

        ``rows=True``: ``f`` treats the leading axis of ``x`` as independent rows, so the finite
        differences run as one stacked call (``gradcheck``'s module docstring).

        With ``reference`` (the exact gradient, e.g. the solution's backward) and ``regions``,
        the feedback says where the differences lie; ``example`` as in ``expect_array``;
        ``counts`` as in ``mismatch`` (a gradient that is a multiple of the right one says so)."""
        got = self._as_array_or_trap(name, got, x, fn, traps)
        err = gradcheck.gradient_error(f, x, dout, got, self.rng, rows=rows)
        if err <= gradcheck.GRAD_RTOL:
            return self._contract_dtype(name, got, fn)
        if example is None:
            example = self._smallest(fn, name)
        narrow = self.dtype_note(name, got, fn, reference)
        if narrow:
            raise Fail(narrow + self._details(name, got, reference, example,
                                              regions if reference is not None else None))
        trap = self.match_trap(got, traps or {})
        extra = self._details(name, got, reference, example, regions if reference is not None else None)
        right = reference if reference is not None else self._reference_output(fn, name)
        if right is None and x.size <= feedback.LOCATE_LIMIT:  # the failure path only: worth the forwards
            try:
                right = gradcheck.numerical_gradient(f, x, dout, rows=rows)
            except Exception:  # noqa: BLE001 (an extra)
                right = None
        factor = self.factor_sentence(name, got, right, counts) if right is not None else None
        where = self.locate(name, got, right) if right is not None else None
        extra = (f"\n{where}" if where else "") + extra
        if trap is not None:
            raise Fail(f"`{name}` from {fn} does not match finite differences. "
                       + (f"{factor} " if factor else "")
                       + f"{self.question.trap(trap).explanation}{extra}", trap)
        raise feedback.located(Fail(f"`{name}` from {fn} does not match the finite-difference gradient "
                           f"(relative error {err:.2g}, tolerance {gradcheck.GRAD_RTOL:g})."
                           + (f" {factor}" if factor else "") + extra), where)

    def factor_sentence(self, name: str, got, expected, counts: dict | None = None) -> str | None:
        """"`dx` is 4 times the right value (4 = ...)." when ``got`` is a multiple of ``expected``
        (see ``feedback.describe_factor``); never raises."""
        try:
            return feedback.describe_factor(name, got, expected, counts)
        except Exception:  # noqa: BLE001 (an extra)
            return None

    # -- feedback worth reading (grader/engine/feedback.py) -----------------------------------
    def where_differs(self, name: str, got, expected, regions: dict) -> str | None:
        """A sentence when every difference lies in one named region of positions."""
        return feedback.where_differs(name, got, expected, regions)

    def smallest_failure(self, fn: str, build, sizes, expected, pick=None, name: str = "the answer",
                         tries: int = 3) -> str | None:
        """The smallest input (from ``build(rng, size)``) where the learner's ``fn`` is still
        wrong, as text; see ``backprop_traps.grader.engine.feedback.smallest_failure``. Uses its own seeded stream."""
        rng = np.random.default_rng([self.seed, zlib.crc32(self.check_name.encode()), 1])
        return feedback.smallest_failure(self.sandbox, rng, fn, build, sizes, expected, pick,
                                         name, tries)

    def _details(self, name, got, expected, example, regions) -> str:
        """Newline-prefixed extras for a failure: where it differs, then the example. Extras
        only describe: if building one goes wrong, it is left out and the verdict stands."""
        parts = []
        try:
            if regions and expected is not None:
                where = feedback.where_differs(name, got, expected, regions() if callable(regions) else regions)
                if where:
                    parts.append(where)
        except Exception:  # noqa: BLE001 (an extra, never a reason to lose the feedback)
            pass
        try:
            if callable(example):
                example = example()
            if example:
                parts.append(example)
        except Exception:  # noqa: BLE001
            pass
        return "".join("\n" + p for p in parts)

    def expect_inputs_unchanged(self, calls) -> None:
        """The check "inputs left unchanged", graded on the functions that answered correctly.

        ``calls`` holds ``(fn, args, names, expected)``: the arguments, the names of those that
        must come back unchanged (positionally, as ``expect_unchanged``), and the reference's
        answer for them (or a callable taking the learner's answer and saying whether it is
        right). Each function is called once with its arguments echoed back. One that wrote
        into an argument fails the check, whatever it answered. One that raised, is missing
        or answered wrong is left to its own checks: it neither passes nor fails this one. The
        check passes only when at least one function answered correctly and none wrote into
        its arguments, so an answer that returns None, zeros or its input gets no point here,
        and a missing companion function costs only its own checks."""
        right, wrong = [], []
        for fn, args, names, expected in calls:
            result = self.sandbox.call(fn, *args, echo_args=True)
            if not result.ok:
                wrong.append(f"{fn}: {result.error}")
                if getattr(result, "kind", "") in ("timeout", "crash", "budget"):
                    break  # do not pay for a broken submission twice
                continue
            for name, before, after in zip(names, args, result.args_after or []):
                if not unchanged(before, after):
                    raise Fail(f"{fn} wrote into its input `{name}`. Functions must not change their "
                               "inputs: the caller may still need them. Work on a copy (e.g. `x.copy()`).")
            try:
                ok = expected(result.value) if callable(expected) else same_answer(result.value, expected)
            except Exception:  # noqa: BLE001 (an answer of an odd kind is not right)
                ok = False
            (right if ok else wrong).append(fn if ok else f"{fn}: its answer is wrong")
        if not right:
            raise Fail("This check gives its point for leaving the inputs unchanged, but only for "
                       "functions that also answered correctly here, and none did ("
                       + "; ".join(w.rstrip(".") for w in wrong) + "). Get them right first.")

    def expect_unchanged(self, fn: str, result, originals: list, names: list[str]) -> None:
        """Inputs echoed back after the call must equal what was sent."""
        after = result.args_after or []
        for name, before, now in zip(names, originals, after):
            if isinstance(before, np.ndarray) and not unchanged(before, now):
                raise Fail(f"{fn} wrote into its input `{name}`. Functions must not change their "
                           "inputs: the caller may still need them. Work on a copy (e.g. `x.copy()`).")
