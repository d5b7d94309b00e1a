"""Calling functions in this process, through the same ``.call`` interface as ``Sandbox``.

Two trusted users need the hidden checks without a child process: ``grade validate``
(the reference, deliberately broken copies of it, and the instructor's own trap answers)
and an nbgrader course, whose autograded cell runs the checks inside the learner's
kernel. ``InProcessCaller`` stands in for the sandbox, so the checks modules run
unchanged: arguments and answers make the same trip through the wire format (copies,
the same types, the same refusals), and failures read like the sandbox's.

What is weaker than the sandbox: no process boundary, so no time or memory limits, no
protection from code that exits or scribbles on the grader, and peak memory measured in
a process that already holds the grader (the delta around the call, as the worker does).
"""
from __future__ import annotations

import contextlib
import io
import time
import types
import warnings

from backprop_traps.grader.sandbox import wire
from backprop_traps.grader.sandbox.process import CallResult


def roundtrip(value):
    """``value`` after the trip through the wire format: a copy, with the sandbox's types."""
    return wire.decode(wire.encode(value)[wire._LEN.size:])


class _Memory:
    """Peak memory of one call, as the sandbox worker measures it: the resident high-water
    mark reset before the call (Linux /proc), and tracemalloc's peak."""

    def measure(self, fn):
        import gc
        import tracemalloc
        gc.collect()
        rss_before = self._reset_hwm()
        tracemalloc.start()
        try:
            result = fn()
        finally:
            _, traced = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        hwm = self._field("VmHWM")
        rss_peak = None if rss_before is None or hwm is None else hwm - rss_before
        return result, {"rss_peak": rss_peak, "traced_peak": traced,
                        "peak": traced if rss_peak is None else max(rss_peak, traced)}

    def _field(self, name):
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith(name + ":"):
                        return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def _reset_hwm(self):
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            return None
        return self._field("VmRSS")


class InProcessCaller:
    """A stand-in for ``Sandbox``: ``call(fn, *args)`` runs ``namespace[fn]`` right here.

    ``namespace`` is a dict or a module-like object (the reference namespace, a notebook's
    ``globals()``). What the called code prints is kept in ``output``, never shown on
    stderr (nbgrader gives a cell with stderr output no points), and warnings are silenced.
    """

    isolation = "none (in process)"
    shares_this_process = True
    """The learner's calls run in the grader's own process: a measured call counts whatever the
    process allocates meanwhile (``CheckContext.meanwhile`` then runs its work first)."""

    def __init__(self, namespace):
        self.namespace = vars(namespace) if isinstance(namespace, types.SimpleNamespace) else namespace
        self._printed = io.StringIO()
        self._memory = _Memory()

    @property
    def output(self) -> str:
        return self._printed.getvalue()[-64 * 1024:]

    def call(self, fn: str, *args, echo_args: bool = False, measure_memory: bool = False) -> CallResult:
        target = self.namespace.get(fn)
        if not callable(target):
            return CallResult(False, kind="missing", error=f"{fn} is not defined in your code")
        try:
            args = list(roundtrip(list(args)))
        except wire.WireError as e:  # a check sent something the sandbox could not carry either
            raise TypeError(f"argument of {fn} cannot cross the sandbox boundary: {e}") from None
        start = time.perf_counter()
        memory = None
        try:
            with self._quiet():
                if measure_memory:
                    value, memory = self._memory.measure(lambda: target(*args))
                else:
                    value = target(*args)
        except NotImplementedError:
            return CallResult(False, kind="not_implemented", seconds=time.perf_counter() - start,
                              error=f"{fn}() is not implemented yet (it raises NotImplementedError)")
        except Exception as exc:  # the called code's fault: a sentence, as the sandbox gives
            message = f": {str(exc)[:400]}" if str(exc) else ""
            return CallResult(False, kind="exception", seconds=time.perf_counter() - start,
                              error=f"{fn}() raised {type(exc).__name__}{message}")
        seconds = time.perf_counter() - start
        try:
            value = roundtrip(value)
            after = roundtrip(args) if echo_args else None
        except wire.WireError as e:
            return CallResult(False, kind="bad_return", seconds=seconds,
                              error=f"{fn}() returned a value the grader cannot use: {e}")
        return CallResult(True, value=value, args_after=after, memory=memory, seconds=seconds)

    @contextlib.contextmanager
    def _quiet(self):
        with warnings.catch_warnings(), contextlib.redirect_stdout(self._printed), \
                contextlib.redirect_stderr(self._printed):
            warnings.simplefilter("ignore")
            yield


def namespace_from_source(source: str, name: str = "answer") -> dict:
    """Run trusted source (the solution's code plus a trap snippet) into a fresh namespace."""
    namespace: dict = {"__name__": name}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace


def run_checks(question, caller, ref, seed: int, only=None) -> list:
    """Every check of ``question`` (or those named in ``only``) against ``caller``'s
    functions, each a ``CheckResult`` exactly as the engine makes it."""
    from backprop_traps.grader.engine.context import CheckContext
    from backprop_traps.grader.engine.run import _run_one
    if question.services and not getattr(caller, "services", None):
        # In this (trusted) process the namespace's own helpers, e.g. the setup cell's
        # counter, stand in for the grader-side services the sandbox would use.
        _, services = question.services()
        caller.services = {name: caller.namespace.get(name) if callable(caller.namespace.get(name)) else fn
                           for name, fn in services.items() if not name.startswith("_")}
    results = []
    for check in question.checks:
        if only is not None and check.name not in only:
            continue
        results.append(_run_one(check, CheckContext(question, caller, ref, seed, check.name)))
    return results

