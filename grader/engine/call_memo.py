"""One grading's memory of functions that timed out: a function that ran past its time limit
once fails every later call at once, with the same reason (issue 24).

Without it, a function that loops forever costs each of its checks its own time limit (six
checks, 60 s). The memo wraps the sandbox for one grading; checks call it like the sandbox.
"""
from __future__ import annotations

from backprop_traps.grader.sandbox.channel import REFUSED, CallResult

GIVE_UP = ("timeout",)
"""Kinds of failure after which a function is not called again in this grading."""


class CallMemo:
    """The sandbox, as a check sees it, with the functions that timed out remembered."""

    source_child = None
    """The question's source harness child, if it has one (``Question.source_harness``)."""

    def __init__(self, sandbox):
        self._sandbox = sandbox
        self.gave_up: dict[str, str] = {}
        """Function name -> the reason it is no longer called (its first timeout's sentence)."""

    def call(self, fn: str, *args, **how) -> CallResult:
        if fn in self.gave_up:
            return CallResult(False, kind="timeout", error=self.gave_up[fn])
        result = self._sandbox.call(fn, *args, **how)
        if not result.ok and result.kind == REFUSED:  # never the learner's: the check is the grader's error
            raise SandboxRefused(result.error)
        if not result.ok and result.kind in GIVE_UP:
            self.gave_up[fn] = (f"{result.error.rstrip('.')}; it is not called again in this grading, "
                                "so its other checks fail for the same reason")
        return result

    def __getattr__(self, name):  # everything else (services, output, run_cells...) is the sandbox's
        return getattr(self._sandbox, name)


class SandboxRefused(Exception):
    """A call failed because of the sandbox itself (grader/sandbox/refusals.py): the check
    cannot judge the answer, and says so as the grader's error."""
