"""A second child for one submission, in which none of the submission's code runs: the grader's
own harness, handed the submission's cells as text (``Question.source_harness``).

What the grader grades from source, the grader must compile and run where the learner's
module code cannot reach: maxpool_kernel's CUDA kernels, graded in the learner's own child,
were graded by a race checker that code could patch first, and were whatever object that code
bound to the kernel's name. This child is a sandbox like the learner's (the same limits,
hidden paths and layers, ``Sandbox.sibling``); its harness is trusted code that reads the cells
as data (parsing learner text happens here, inside the sandbox, never in the grader), and
answers plain data through the same bounded wire format. It boots in a thread while the
learner's child loads, and its calls share the submission's time budget.
"""
from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

from backprop_traps.grader.sandbox.inert import inert
from backprop_traps.grader.sandbox.process import CallResult, Sandbox

HERE = Path(__file__).resolve().parent
MEMORY_MB = 1024
"""The harness child's address space: numba's simulator and a block of threads need about
400 MB; a submission's two children together hold at most this much more than one."""
HARNESS_FAILURES = ("exception", "bad_return", "missing", "not_implemented")
"""Kinds of failure of a harness call that are the harness's (the grader's), never the learner's."""


def harness_source(modules: list[tuple[str, str]], entry: str) -> str:
    """Helpers source that loads each ``(name, source)`` as a module of its own (seeing the
    earlier ones under their names), then runs ``entry`` (which sees them in ``_grader_modules``)."""
    lines = ["def _grader_module(name, source, given):",
             "    import types",
             "    module = types.ModuleType(name)",
             "    module.__dict__.update(given)",
             "    exec(compile(source, '<' + name + '>', 'exec'), module.__dict__)",
             "    return module",
             "_grader_modules = {}"]
    for name, text in modules:
        lines.append(f"_grader_modules[{name!r}] = _grader_module({name!r}, {text!r}, dict(_grader_modules))")
    return "\n".join(lines) + "\n" + entry + "\ndel _grader_module, _grader_modules\n"


def kernel_harness(names: list[str]) -> str:
    """The harness that compiles the CUDA kernels ``names`` from source and launches them under
    the race checker (``kernel_source``, ``kernel_launch``): ``_grader_take_source(cells)`` and
    ``_grader_launch(name, blocks, threads, args)``."""
    import importlib.util
    checker = Path(importlib.util.find_spec("backprop_traps.grader.sandbox.race_checker").origin)  # read, not imported
    modules = [("race_checker", checker.read_text(encoding="utf-8"))] + [
        (name, (HERE / f"{name}.py").read_text(encoding="utf-8"))
        for name in ("kernel_rules", "kernel_integers", "kernel_source", "kernel_launch")]
    entry = (f"_grader_modules['kernel_launch'].prepare()\n"
             f"def _grader_take_source(cells, _take=_grader_modules['kernel_launch'].take_source):\n"
             f"    return _take(cells, {list(names)!r})\n"
             f"_grader_launch = _grader_modules['kernel_launch'].launch")
    return harness_source(modules, entry)


class SourceChild:
    """The harness's child for the submission ``main`` grades; ``call`` is like ``Sandbox.call``,
    with the harness's own failures as kind "harness" (the grader's error, never the learner's)."""

    def __init__(self, main: Sandbox, harness: str):
        self.main = main
        self.box = main.sibling(harness, dataclasses.replace(
            main.limits, memory_mb=min(main.limits.memory_mb, MEMORY_MB)))
        cells = main.cells or [("", main.source, None)]
        self.cells = [[label, source, fallback or ""] for label, source, fallback in cells]
        self.gave_up: dict[str, CallResult] = {}
        """Calls (by key) that ran past their time once: not tried again in this grading."""
        self.taken = None
        """What the harness answered to the source (``_grader_take_source``), plain data."""
        self._holder = None  # the child process that holds the source
        self._failed: CallResult | None = None
        self._thread: threading.Thread | None = None

    def begin(self) -> None:
        """Boot the child and hand it the source in the background (while the learner's loads)."""
        self.box.launch()
        self._thread = threading.Thread(target=self._quietly_ready, daemon=True)
        self._thread.start()

    def _quietly_ready(self) -> None:
        try:
            self._ready()
        except Exception as exc:  # noqa: BLE001 (closed under it: the next call says why)
            self._failed = CallResult(False, kind="harness", error=f"{type(exc).__name__}: {exc}")

    def _join(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def ready(self) -> CallResult:
        """Whether the harness runs and holds the source (a restart after a crash gets it again)."""
        self._join()
        return self._ready()

    def _ready(self) -> CallResult:
        if self._failed is not None:
            return self._failed
        if self._holder is not None and self._holder is self.box.running:
            return CallResult(True, value=self.taken)
        if self.box.running is None:
            started = self.box.start()
            if not started.ok:
                return self._fail(started)
        given = self.box.call("_grader_take_source", self.cells)
        if not given.ok:
            return self._fail(given)
        self.taken, self._holder = given.value, self.box.running
        return CallResult(True, value=self.taken)

    def _fail(self, result: CallResult) -> CallResult:
        self._failed = CallResult(False, kind="harness", error=(
            f"the grader's own child, which reads your code as text, could not start in this sandbox "
            f"({inert(self.box.isolation, 120)}): {inert(result.error, 300)}"))
        return self._failed

    def call(self, fn: str, *args, key: str | None = None) -> CallResult:
        """``fn(*args)`` in the harness, charged to the submission's time budget."""
        self._join()
        if key is not None and key in self.gave_up:
            return self.gave_up[key]
        ready = self._ready()
        if not ready.ok:
            return ready
        before = self.box.spent = self.main.spent  # one budget for the submission, both children
        result = self.box.call(fn, *args)
        self.main.spent += self.box.spent - before
        if not result.ok and result.kind in HARNESS_FAILURES:
            return CallResult(False, kind="harness", error=(
                f"the grader's own child failed ({inert(result.error, 300)})"))
        if not result.ok and result.kind == "timeout" and key is not None:
            self.gave_up[key] = result
        return result

    def close(self) -> None:
        """End the child (first, so that a boot still under way ends too), then its thread."""
        self.box.close()
        self._join()
        self.box.close()
