"""How much slower than a typical laptop this machine runs Python, and practice's time budgets
scaled to it (issue 44).

A learner on a slow machine (an emulated one, a small ARM board, a loaded laptop) must not lose a
memory check to a fixed 10 s budget with a sentence that blames the code. So a learner's own
practice times a fixed piece of work first (a Python loop: what the child's imports and the
checks' calls are made of, and what an emulator slows most) and multiplies the time budgets by
how much slower it ran than on a typical laptop. A course's budgets are the instructor's and
stay fixed; so do budgets set by hand (``Limits.fixed``). Either way the slowdown is kept, so
that a timeout's sentence can name it (``Limits.too_slow``).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import time

from backprop_traps.grader.sandbox.limits import Limits

PROBE_LOOPS = 100_000
"""Iterations of the probe's loop: about 15 ms on a typical laptop core."""
TYPICAL_SECONDS = 0.015
"""The probe's best round on an idle core of the project's 2-core machines (15 ms measured; a
current laptop is faster). A machine at or below it gets the default budgets; the same machine
under a load of 14 measured 31-44 ms (2-3x), QEMU's emulation (benchmarks/results/machines.md)
more."""
ROUNDS = 3
"""The best of three rounds is taken: a round slowed by a neighbour's burst does not count."""
SLOWDOWN_ENV = "BACKPROP_TRAPS_SLOWDOWN"
"""A slowdown given instead of probed (1 turns the scaling off: the test suite sets it, so that
its budgets do not depend on how busy the machine is); capped like a probed one."""
MAX_SLOWDOWN = 60.0
"""Budgets grow at most this much (QEMU's software emulation measured 10-30x): past it, a
machine too slow for any budget still ends an endless loop within an hour."""


def _work(loops: int) -> int:
    total = 0
    for i in range(loops):
        total += (i * i) % 7
    return total


def probe_seconds(clock=time.perf_counter, rounds: int = ROUNDS, loops: int = PROBE_LOOPS) -> float:
    """The best of ``rounds`` timings of the probe's work, read with ``clock``."""
    best = float("inf")
    for _ in range(rounds):
        start = clock()
        _work(loops)
        best = min(best, clock() - start)
    return best


def slowdown_of(seconds: float) -> float:
    """The factor a probe time of ``seconds`` means: 1 up to a typical laptop's, at most
    ``MAX_SLOWDOWN``."""
    if not seconds == seconds or seconds <= TYPICAL_SECONDS:  # NaN or fast: no scaling
        return 1.0
    return min(seconds / TYPICAL_SECONDS, MAX_SLOWDOWN)


def slowdown_now() -> float:
    """This machine's slowdown measured now, unless ``BACKPROP_TRAPS_SLOWDOWN`` gives it (then
    that, whenever asked: a re-probe after a timeout follows it too)."""
    given = os.environ.get(SLOWDOWN_ENV, "")[:32]
    try:
        return slowdown_of(float(given) * TYPICAL_SECONDS)
    except ValueError:  # unset or not a number: measure
        return slowdown_of(probe_seconds())


@functools.lru_cache(maxsize=1)
def slowdown() -> float:
    """This machine's slowdown, probed once per process (a batch grades many files); a call that
    runs out of time probes again (speed_recheck.py): the load may have changed since."""
    return slowdown_now()


def calibrated(limits: Limits, practice: bool, factor: float | None = None) -> Limits:
    """``limits`` for this machine: a learner's own practice with budgets not set by hand gets
    them multiplied by the slowdown (``factor``, probed when None); otherwise the budgets stay
    and only the slowdown is recorded, for the timeout's sentence."""
    if limits.scaled:
        return limits
    factor = slowdown() if factor is None else factor
    if not practice or limits.fixed or factor <= 1.0:
        return dataclasses.replace(limits, slowdown=factor)
    scale = functools.partial(_scaled, factor=factor)
    return dataclasses.replace(
        limits, slowdown=factor, scaled=True, call_seconds=scale(limits.call_seconds),
        total_seconds=scale(limits.total_seconds), load_seconds=scale(limits.load_seconds),
        code_seconds=scale(limits.code_seconds))


def _scaled(seconds: float | None, factor: float) -> float | None:
    return None if seconds is None else round(seconds * factor, 1)
