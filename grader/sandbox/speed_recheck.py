"""A call that ran out of time: was it the machine? (issue 44)

Practice's budgets are scaled by the machine's speed probed once, before grading
(machine_speed.py); a neighbour's load can then change under a long grading (an emulated machine
whose host got busier lost a memory check at 17x budgets). So when a call runs out of time, the
grader probes the machine again (tens of milliseconds on a laptop). Where it is now clearly
slower, a learner's practice with budgets not set by hand scales the budgets to the new speed and
runs the call once more, its first try not charged: the machine, not the code, used that time.
Either way the timeout's sentence says what was measured, before and after. A course's budgets
are the instructor's and stay; its sentence names the measurements too.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from backprop_traps.grader.sandbox import machine_speed
from backprop_traps.grader.sandbox.channel import CallResult
from backprop_traps.grader.sandbox.limits import Limits

SLOWER_BY = 1.25
"""A re-probe this much slower than the speed the budgets were scaled to means the machine slowed
down (below it, taken for the probe's own noise, and the timeout stands)."""


def rechecked(limits: Limits, practice: bool, may_rescale: bool = True) -> tuple[Limits, bool]:
    """``limits`` with the machine's speed probed again, and whether the call should run again
    under them (then their budgets are scaled to the new speed)."""
    now = machine_speed.slowdown_now()
    measured = dataclasses.replace(limits, slowdown_after=now)
    budgets_speed = limits.slowdown if limits.scaled else 1.0
    if not (may_rescale and practice and not limits.fixed and now >= SLOWER_BY * budgets_speed):
        return measured, False
    factor = now / budgets_speed

    def grown(seconds: float | None) -> float | None:
        return None if seconds is None else round(seconds * factor, 1)
    return dataclasses.replace(
        limits, slowdown=now, scaled=True, slowdown_before=limits.slowdown, slowdown_after=None,
        call_seconds=grown(limits.call_seconds), total_seconds=grown(limits.total_seconds),
        load_seconds=grown(limits.load_seconds), code_seconds=grown(limits.code_seconds)), True


def after_timeout(box, spent_before: float, result: CallResult, again: Callable[[], CallResult]) -> CallResult:
    """What a call that ran out of time in ``box`` (a Sandbox) finally gives: run ``again`` once
    under rescaled budgets where the machine slowed down, and a sentence saying what was measured."""
    limits, rescale = rechecked(box.limits, box.practice)
    if rescale:
        box.limits, box.spent = limits, spent_before  # its first try was the machine's time, not the code's
        result = again()
        if result.kind != "timeout":
            return result
        limits, _ = rechecked(box.limits, box.practice, may_rescale=False)
    said, box.limits = box.limits.too_slow(), limits
    return dataclasses.replace(result, error=result.error.replace(said, limits.too_slow()))
