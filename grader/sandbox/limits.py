"""The child's limits, with their defaults (documented in the README's security section)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    call_seconds: float = 10.0
    """Wall-clock seconds one call into the learner's code may take."""
    load_seconds: float | None = None
    """Wall-clock seconds for loading the submission (its imports: PyTorch alone can take
    several seconds on a busy machine); None: three times ``call_seconds``."""
    code_seconds: float | None = None
    """Wall-clock seconds for the submission's own code to load once the libraries it imports
    are loaded (on their own, within ``load_budget``); None: no separate limit, the code shares
    the load budget. A batch sets it (``BATCH_CODE_SECONDS``) so that a loop at load time is cut
    in seconds and does not set the whole class's wall time."""
    total_seconds: float = 60.0
    """Wall-clock seconds for all the calls of one submission together."""
    memory_mb: int = 4096
    """Address-space cap of the child (RLIMIT_AS); a bigger allocation raises MemoryError."""
    output_kb: int = 64
    """What the learner prints is kept up to this size; the rest is counted and dropped."""
    file_mb: int = 16
    """Largest file the child may write (RLIMIT_FSIZE), inside its own temp dir only."""
    message_mb: int = 64
    """Largest answer the child may send back; a bigger one is refused, not read."""
    tmp_mb: int = 64
    """Size of the sandbox's private /tmp (a tmpfs, counted in its memory where a cgroup
    counts it)."""
    open_files: int = 512
    """Open files per process of the sandbox (a hard RLIMIT_NOFILE): the host's open files,
    inotify instances and other per-user counts must stay available to everyone else."""
    cpus: float = 1.0
    """CPU time per second of wall time the whole sandbox may use (its cgroup's CPU quota):
    a submission's busy processes cannot starve the grader or a neighbour's sandbox."""
    max_processes: int = 256
    """Processes and threads the whole sandbox may hold at once (its cgroup's pids.max)."""
    fixed: bool = False
    """The time budgets were set by hand (an instructor's, or ``--call-timeout``): never scaled
    to the machine's speed (``machine_speed.calibrated``)."""
    slowdown: float = 1.0
    """How much slower than a typical machine this one ran the speed probe (1: not slower, or
    not measured); a timeout's sentence says so rather than blame the code alone."""
    scaled: bool = False
    """Whether the time budgets were already multiplied by ``slowdown``."""
    slowdown_before: float | None = None
    """The slowdown probed before grading, where a call that ran out of time found the machine
    slower and the budgets were scaled again to ``slowdown`` (speed_recheck.py); else None."""
    slowdown_after: float | None = None
    """The slowdown probed again right after a call ran out of time (None: not probed again)."""

    def too_slow(self) -> str:
        """Why a call can run past its budget, in the words a timeout's message ends with: what
        was measured of the machine, so that a slow machine is never taken for slow code."""
        if max(self.slowdown, self.slowdown_after or 0.0) < NOTABLY_SLOW:
            return "an endless loop, or far too slow"
        if self.scaled:
            return (f"an endless loop, or far too slow even for this machine: its budgets are already "
                    f"{self.slowdown:.0f}x the usual ones, as {self._measured()}")
        return (f"an endless loop, or too slow for this budget: {self._measured()}, and the budget "
                "was set by hand (by you or your course), not scaled to the machine")

    def _measured(self) -> str:
        first = self.slowdown if self.slowdown_before is None else self.slowdown_before
        after = self.slowdown_after
        start = ("ran Python at a typical laptop's speed" if first < NOTABLY_SLOW
                 else f"ran Python {first:.0f}x slower than a typical laptop")
        if self.slowdown_before is not None:  # found slower after a timeout: ran again (speed_recheck.py)
            return (f"this machine {start} before grading and {self.slowdown:.0f}x slower when this call "
                    "first ran out of time, so the call ran again under budgets scaled to that"
                    + (f" ({_speed(after)} right after it ran out again)" if after is not None else ""))
        if first < NOTABLY_SLOW:  # only the probe after the timeout found it slow
            return f"this machine {start} before grading and {after:.0f}x slower right after this call ran out"
        return (f"this machine runs Python {first:.0f}x slower than a typical laptop (measured before grading"
                + (f"; {_speed(after)} right after this call ran out" if after is not None else "") + ")")

    @property
    def code_budget(self) -> float:
        return self.code_seconds if self.code_seconds is not None else self.load_budget

    @property
    def load_budget(self) -> float:
        return self.load_seconds if self.load_seconds is not None else 3 * self.call_seconds


NOTABLY_SLOW = 2.0
"""A slowdown from here on is named in a timeout's sentence (below it, the probe's own noise)."""


def _speed(slowdown: float) -> str:
    return "a typical laptop's speed" if slowdown < NOTABLY_SLOW else f"{slowdown:.0f}x"


BATCH_CODE_SECONDS = 5.0
"""A batch's default ``code_seconds``: defining functions takes milliseconds, and a class's
slowest honest notebooks (a plot, a small demo) load in about a second once their imports are
in; an endless loop is cut here rather than at the load budget."""
