"""A memory check's one way to read a measured call: its peak, or ``Fail`` saying why not.

Every check that measures memory (``ctx.call(fn, ..., measure_memory=True)``) reads the
result through ``peak_of``: the number comes from the sandbox's meter (the cgroup, or for a
learner's own practice the practice meter, ``result.memory["meter"]`` says which), and where
none counts here, the check fails with the meter's reason, which says what would give one
(a course without a tamper-proof meter; the systemd command where it helps).
"""
from __future__ import annotations

from backprop_traps.grader.engine.question import Fail


def peak_of(result) -> int:
    """Bytes the measured call peaked at (above its baseline, less its inputs)."""
    memory = result.memory or {}
    peak = memory.get("peak")
    if peak is None:
        why = memory.get("unavailable", "no memory measurement came back")
        raise Fail(f"Peak memory cannot be measured on this platform ({why}), so this check cannot "
                   "pass here.")
    return peak
