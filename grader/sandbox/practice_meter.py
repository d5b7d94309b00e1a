"""The practice meter: memory measured where no tamper-proof meter exists, for a learner's own
practice only (issue 39). Never used for a course (a secret, ``grade batch``, nbgrader).

What it counts: the sandboxed worker's peak resident size during the call (``VmHWM``, reset
through ``clear_refs`` right before it), less its file-backed pages at the end of the call
(library code first run during the call: a cgroup charges no such page to the call), above
its anonymous and shared resident size at the baseline (after the submission's imports, before
any other learner code), less the call's own inputs: the same shape of number the cgroup
meter gives, read by the grader from ``/proc/<worker>/status``. It tracks the activations the
memory checks are about: numpy's and torch's arrays are resident once written, and the
worker's heap settings (``worker.steady_heap``) hand freed blocks back, so a store-everything
answer peaks high and a checkpointing one low (against the cgroup meter on every memory
question's answers: the same verdicts, each call within 1 MiB, benchmarks/memory_meters.py).
numpy also reports its arrays to ``tracemalloc``, torch does not: a traced count would pass a
torch answer that keeps everything, so it is only the fallback where the grader cannot read the
worker's memory (no ``/proc``: macOS, say): then the worker traces the call's allocations
itself (``worker.trace_start``) and sends the peak, checked to be a plain number.

Why it is not tamper-proof: it counts one process (without a cgroup the sandbox may not
fork, make shared memory or memfd, but its code could still reset the count or unmap library
pages to make room). A learner alone has no one to cheat; every result it gives says
"practice meter: not tamper-proof".
"""
from __future__ import annotations

import json
import os
import select
import shlex
from pathlib import Path

from backprop_traps.grader.sandbox import wire
from backprop_traps.grader.sandbox.meter import PRACTICE, Meter


def _status(pid: int, *fields: str) -> list[int]:
    """The named fields of ``/proc/PID/status``, in bytes."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in fields:
            found[name] = int(value.split()[0]) * 1024
    missing = [f for f in fields if f not in found]
    if missing:
        raise ValueError(f"no {', '.join(missing)} in /proc/{pid}/status")
    return [found[f] for f in fields]


def _children(pid: int) -> list[int]:
    """``pid``'s children: from ``/proc/PID/task/PID/children``, else by a scan of /proc."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        pass
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return found


class PracticeMeter(Meter):
    """The worker's own high-water mark, reset and read by the grader through /proc."""
    measures = True
    trusted = False

    def __init__(self, group=None):
        """``group``: a cgroup that caps the sandbox but keeps no peak (cgroup v2 before Linux
        5.19); None where there is none (then the sandbox may not fork: seccomp)."""
        super().__init__("")
        self.group = group
        self.whole_sandbox = group is not None
        self.caps_processes = group is not None and group.caps_processes
        self.worker: int | None = None
        self.baseline: int | None = None
        self.reset = False
        self.traced = False
        """No /proc to read: the worker traces the call's allocations (``request_extras``)."""
        self.pid, self.info_fd = None, None

    def wrap(self, argv):
        if self.group is None:
            return argv
        joins = " && ".join(f"echo $$ > {shlex.quote(str(f))}" for f in self.group.procs_files)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh"] + argv

    def _worker_pid(self) -> int | None:
        """The worker's pid as the grader sees it: bubblewrap reports its sandbox's first
        process (``--info-fd``), whose only child is the worker; without bubblewrap, the child."""
        if self.info_fd is None:
            return self.pid
        ready, _, _ = select.select([self.info_fd], [], [], 5)
        if not ready:
            return None
        try:
            init = int(json.loads(os.read(self.info_fd, 4096))["child-pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        children = _children(init)
        return children[0] if children else None

    def start(self):
        try:
            self.worker = self.worker or self._worker_pid()
            if self.worker is None:
                raise ValueError("the sandbox's worker could not be found")
            self.baseline = sum(_status(self.worker, "RssAnon", "RssShmem"))
        except (OSError, ValueError):
            self.traced, self.baseline = True, 0

    def begin_call(self):
        self.reset = False
        if self.baseline is None or self.traced:
            return
        try:  # VmHWM := VmRSS (Linux 4.0+)
            Path(f"/proc/{self.worker}/clear_refs").write_text("5")
            self.reset = True
        except OSError:
            self.traced = True

    def request_extras(self):
        return {"trace_memory": True} if self.traced else {}

    def read(self, request, reply=None):
        if self.traced:
            traced = (reply or {}).get("traced_peak")
            if type(traced) is not int or traced < 0:  # the child's word, and a plain number only
                return {"peak": None, "unavailable": "the sandbox's memory could not be read here, nor traced",
                        "meter": self.label}
            return {"peak": traced, "above_baseline": traced, "inputs": 0,
                    "source": f"{PRACTICE} (tracemalloc)", "meter": self.label}
        if self.baseline is None or not self.reset:
            return {"peak": None, "unavailable": self.why or "the sandbox's baseline memory was never read",
                    "meter": self.label}
        try:
            hwm, files = _status(self.worker, "VmHWM", "RssFile")
            raw = max(0, hwm - files - self.baseline)
        except (OSError, ValueError) as e:
            return {"peak": None, "unavailable": f"the sandbox's memory could not be read ({e})",
                    "meter": self.label}
        sent = wire.encoded_size(request)
        return {"peak": max(0, raw - sent), "above_baseline": raw, "inputs": sent,
                "source": self.describe(), "meter": self.label}

    def describe(self):
        return PRACTICE if self.measures else "memory not measurable"

    @property
    def label(self):
        return PRACTICE if self.measures else super().label

    def close(self):
        if self.group is not None:
            self.group.remove()
