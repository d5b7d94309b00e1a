"""The time a feedback search may take, and what it costs the submission (issue 43, class 3).

After a check fails, three searches do extra work to explain it: the smallest failing input
(``feedback.smallest_failure``, ``shrink.smallest``) and the upstream replay (``upstream``).
Each calls the learner's code in the sandbox and the reference here, in the grader. Feedback
must not cost the learner points, and it must not run outside the submission's budget, so each
search gets a tenth of the submission's total time left, at most ``SECONDS``, counting
both the sandbox's time and the grader's own work (the reference's calls, measured as this
thread's CPU time, which a loaded machine does not inflate); and when it ends, the grader's own
part is charged to the submission's total budget (``Sandbox.charge``), like its calls were.
"""
from __future__ import annotations

import time

SECONDS = 3.0  # the most one search for a small example may spend in the learner's code
SHARE = 0.1
"""What one search for feedback (a smaller failing input, ``smallest_failure`` and
engine/shrink.py; an upstream function's replay, engine/upstream.py) may spend of what is left
of the submission's total time budget, at most ``SECONDS``. These run only after a check has
failed, and only describe: a right answer never pays for them, a wrong one pays a bounded share."""


def allowance(sandbox) -> float:
    """Seconds of the learner's code that one search for feedback may spend now (``SHARE``)."""
    limits = getattr(sandbox, "limits", None)
    left = (limits.total_seconds - getattr(sandbox, "spent", 0.0)) if limits is not None else SECONDS
    return min(SECONDS, SHARE * max(left, 0.0))


class SearchBudget:
    """One search's allowance on ``sandbox`` (a ``Sandbox`` or anything that passes its
    ``spent``, ``limits`` and ``charge`` through)."""

    def __init__(self, sandbox, most: float | None = None):
        self.sandbox = sandbox
        self.start = getattr(sandbox, "spent", 0.0)
        if most is None:  # the one rule: allowance (a tenth of what is left, SECONDS at most)
            self.allowance = allowance(sandbox)
        else:
            limits = getattr(sandbox, "limits", None)
            left = (limits.total_seconds - self.start) if limits is not None else most
            self.allowance = min(most, SHARE * max(left, 0.0))
        self._cpu = time.thread_time()
        self._closed = False

    def own(self) -> float:
        """The grader's own CPU time in this search so far."""
        return time.thread_time() - self._cpu

    def used(self) -> float:
        return getattr(self.sandbox, "spent", 0.0) - self.start + self.own()

    def over(self) -> bool:
        """Whether the search has used its allowance (the next step must not start)."""
        return self.used() >= self.allowance  # a spent allowance (0 included) starts nothing

    def close(self) -> None:
        """Charge the grader's own time in the search to the submission's total budget (once)."""
        if self._closed:
            return
        self._closed = True
        charge = getattr(self.sandbox, "charge", None)
        if callable(charge):
            charge(self.own())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
