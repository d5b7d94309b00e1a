"""The meter every sandbox has: the memory-meter interface, the meter that measures nothing
(``read`` says why), and the words a result uses for how its memory was counted.

The meters that measure (``measure.CgroupMeter``, ``practice_meter.PracticeMeter``) build on
it, and ``measure.create`` picks one; it is a module of its own so that the practice meter need
not import ``measure``, which imports it."""
from __future__ import annotations

MB = 1024 * 1024
NO_CGROUP = ("without a cgroup of its own no memory meter is tamper-proof (a process's own resident "
             "size counts library pages it can unmap at will)")
NO_PEAK = "this kernel's cgroup v2 keeps no peak to read (memory.peak came with Linux 5.19)"
IN_A_COURSE = ("a course (a course secret, `grade batch`, nbgrader) gives memory points only where a "
               "tamper-proof meter exists")
COURSE_LABEL = "not measured: no tamper-proof meter here, and this is a course"
PRACTICE = "practice meter: not tamper-proof"
"""The label of a measurement by the practice meter, in words and in ``--json``'s ``memory``."""


class Meter:
    """No measurement (``isolate=False``, or no trustworthy meter in a course): ``read`` says why."""
    measures = False
    whole_sandbox = False
    """Whether a cgroup holds (and caps) every process of the sandbox."""
    caps_processes = False
    """Whether a pids controller caps its processes: else seccomp refuses new ones."""

    def __init__(self, why: str = "memory is not measured for an unisolated sandbox", short: str = ""):
        self.why = why
        self.short = short
        """The label's words where ``why`` is too long for it."""

    @property
    def label(self) -> str:
        """How this meter counts, for the result (``--json``'s ``memory``)."""
        words = self.short or self.why
        return words if words.startswith("not measured") else f"not measured: {words}"

    def wrap(self, argv: list[str]) -> list[str]:
        return argv

    def unfiltered(self) -> None:
        """The sandbox runs without its seccomp filter: say so where that matters."""

    def attach(self, pid: int, info_fd: int | None) -> None:
        self.pid, self.info_fd = pid, info_fd

    def start(self) -> None:
        """The baseline: before any learner code beyond its imports has run."""

    def begin_call(self) -> None:
        """Right before the measured call's request is sent."""

    def request_extras(self) -> dict:
        """What the measured call's request asks of the worker besides the call."""
        return {}

    def read(self, request, reply: dict | None = None) -> dict:
        """The call's memory, once it answered (``reply``: the worker's answer, or None)."""
        return {"peak": None, "unavailable": self.why, "meter": self.label}

    def describe(self) -> str:
        return "memory not measured"

    def close(self) -> None:
        pass
