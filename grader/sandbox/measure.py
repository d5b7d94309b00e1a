"""Peak memory of a sandbox, read by the grader from the kernel: the numbers that decide
points never come from inside the sandbox.

Two meters, the best the machine allows:

- ``CgroupMeter``: the sandbox's own cgroup (``cgroup.py``) charges every page of every
  process in it, shared memory, memfd and tmpfs included, and also caps its memory and
  process count. Processes may fork: they are all counted.
- ``HighWaterMeter`` (no writable cgroup): the worker's own high-water mark (``VmHWM``),
  reset and read by the grader through ``/proc/<pid>``. It counts one process only, so
  the sandbox may not make another (seccomp refuses fork, shared memory and memfd); where
  that refusal cannot be installed either, the meter says memory cannot be measured.

A measured call counts from a baseline taken after the submission's import statements ran
and before any other learner code did (``Sandbox._meter_baseline``), less one copy of the
call's own inputs (the request the grader sent): libraries imported are not the learner's
memory, while anything the learner's code holds from load time is.
"""
from __future__ import annotations

import json
import os
import select
import shlex
from pathlib import Path

from grader.sandbox import cgroup, seccomp, wire

MB = 1024 * 1024


class Meter:
    """No measurement (``isolate=False``, or nothing usable): ``read`` says why."""
    measures = False
    whole_sandbox = False
    why = "memory is not measured for an unisolated sandbox"

    @staticmethod
    def create(limits, isolate: bool) -> "Meter":
        if not isolate:
            return Meter()
        group = cgroup.create(limits.memory_mb * MB + limits.tmp_mb * MB + 256 * MB,
                              limits.max_processes)
        if group is not None:
            return CgroupMeter(group)
        return HighWaterMeter()

    def wrap(self, argv: list[str]) -> list[str]:
        return argv

    def unfiltered(self) -> None:
        """The sandbox runs without its seccomp filter: say so where that matters."""

    def attach(self, pid: int, info_fd: int | None) -> None:
        self.pid, self.info_fd = pid, info_fd

    def start(self) -> None:
        pass

    def read(self, request) -> dict:
        return {"peak": None, "unavailable": self.why}

    def describe(self) -> str:
        return "memory not measured"

    def close(self) -> None:
        pass

    def _result(self, raw: int, request) -> dict:
        sent = wire.encoded_size(request)
        return {"peak": max(0, raw - sent), "above_baseline": raw, "inputs": sent,
                "source": self.describe()}


class CgroupMeter(Meter):
    measures = True
    whole_sandbox = True

    def __init__(self, group: cgroup.Group):
        self.group = group
        self.baseline = None

    def wrap(self, argv):
        """Enter the cgroup before anything else runs: a shell joins it, then execs."""
        joins = " && ".join(f"echo $$ > {shlex.quote(str(f))}" for f in self.group.procs_files)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh"] + argv

    def start(self):
        self.group.reset_peak()
        self.baseline = self.group.usage()

    def read(self, request):
        if self.baseline is None:
            return {"peak": None, "unavailable": "the sandbox's baseline memory was never read"}
        try:
            return self._result(self.group.peak() - self.baseline, request)
        except (OSError, ValueError) as e:
            return {"peak": None, "unavailable": f"the cgroup could not be read ({e})"}

    def describe(self):
        return f"cgroup v{self.group.version} memory"

    def close(self):
        self.group.remove()


class HighWaterMeter(Meter):
    whole_sandbox = False

    def __init__(self):
        ok, why = seccomp.available()
        self.measures = ok
        self.why = ("this machine can neither count the sandbox's processes (no writable cgroup) "
                    f"nor stop it from making more ({why}), so its memory cannot be measured")
        self.worker = None
        self.baseline = None

    def _worker_pid(self) -> int | None:
        """The worker's pid as the grader sees it: bubblewrap reports its sandbox's PID 1
        (``--info-fd``), whose only child is the worker; without bubblewrap, the child."""
        if self.info_fd is None:
            return self.pid
        ready, _, _ = select.select([self.info_fd], [], [], 5)
        if not ready:
            return None
        try:
            init = int(json.loads(os.read(self.info_fd, 4096))["child-pid"])
            children = Path(f"/proc/{init}/task/{init}/children").read_text().split()
            return int(children[0]) if children else None
        except (OSError, ValueError, KeyError, IndexError):
            return None

    def unfiltered(self):
        self.measures = False
        self.why = ("the sandbox's seccomp filter could not be installed, so it could make processes "
                    "this meter does not see: its memory cannot be measured here")

    def _status(self, field: str) -> int:
        for line in Path(f"/proc/{self.worker}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise ValueError(field)

    def start(self):
        if not self.measures:
            return
        try:
            self.worker = self.worker or self._worker_pid()
            Path(f"/proc/{self.worker}/clear_refs").write_text("5")  # VmHWM := VmRSS
            self.baseline = self._status("VmRSS")
        except (OSError, ValueError, TypeError) as e:
            self.measures, self.baseline = False, None
            self.why = f"the sandbox's memory cannot be read from /proc here ({type(e).__name__})"

    def read(self, request):
        if not self.measures or self.baseline is None:
            return {"peak": None, "unavailable": self.why}
        try:
            return self._result(self._status("VmHWM") - self.baseline, request)
        except (OSError, ValueError) as e:
            return {"peak": None, "unavailable": f"the sandbox's memory could not be read ({e})"}

    def describe(self):
        return "high-water mark, no fork" if self.measures else "memory not measurable"
