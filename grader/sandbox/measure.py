"""Peak memory of a sandbox, read by the grader from the kernel: the numbers that decide
points never come from inside the sandbox, and count only memory the learner's code cannot
make vanish (issue 23, class 1).

The one trustworthy meter is the sandbox's own cgroup (``cgroup.py``): it charges every
page of every process in it, shared memory, memfd, tmpfs and kernel memory included.
Its usage also holds page cache (the ``.pyc`` files read at import, mapped libraries),
which learner code could evict during the call to make room for activations unseen. So each
measured call runs in a fresh ``call-N`` group that starts at zero (``Group.begin_call``):
the page cache charged before it stays behind in the older groups (``load``, and the groups
of the calls measured before it in the same child), and whatever the call adds can only
raise its peak. The call's memory is

    peak of the new call group                   (all it allocated, at its highest)
  + growth of each older group during the call   (objects made earlier, e.g. sockets)
  + the older groups' non-evictable memory when the call starts, less the load group's
    at the baseline                              (a pool filled at load time, or kept
                                                  by an earlier call)

less one copy of the call's own inputs (the request the grader sent). The baseline is
read after the submission's import statements ran and before any other learner code did
(``Sandbox._meter_baseline``): libraries are not the learner's memory. Eviction itself
(``posix_fadvise``, ``madvise`` COLD/PAGEOUT, ``process_madvise``) is refused by the
seccomp filter, and where swap is counted (v1 ``memsw``) or off (v2 ``swap.max`` 0) pushing
pages out hides nothing either.

Without a writable cgroup there is no such meter: a process's own high-water mark counts
mapped library pages, which it can unmap at will, so it is not used. Memory is then not
measured, ``read`` says why, and no memory check gives points (``grade doctor`` says so).
"""
from __future__ import annotations

import shlex

from backprop_traps.grader.sandbox import cgroup, wire

MB = 1024 * 1024
NO_CGROUP = ("this machine gives the grader no cgroup of its own (run as root, or in a delegated "
             "cgroup v2 subtree), and without one no memory meter here is trustworthy: a process's "
             "own resident size counts library pages it can unmap at will")


class Meter:
    """No measurement (``isolate=False``, or no cgroup): ``read`` says why."""
    measures = False
    whole_sandbox = False

    def __init__(self, why: str = "memory is not measured for an unisolated sandbox"):
        self.why = why

    @staticmethod
    def create(limits, isolate: bool) -> "Meter":
        """The best meter here; raises ``cgroup.CgroupError`` where cgroups work but this
        sandbox's could not be made (never a silent fall back)."""
        if not isolate:
            return Meter()
        group = cgroup.create(limits.memory_mb * MB + limits.tmp_mb * MB + 256 * MB,
                              limits.max_processes, limits.cpus)
        return CgroupMeter(group) if group is not None else Meter(NO_CGROUP)

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

    def read(self, request) -> dict:
        return {"peak": None, "unavailable": self.why}

    def describe(self) -> str:
        return "memory not measured"

    def close(self) -> None:
        pass


class CgroupMeter(Meter):
    measures = True
    whole_sandbox = True

    def __init__(self, group: cgroup.Group):
        super().__init__()
        self.group = group
        self.baseline = self.held = None
        self.starts: dict = {}  # older group -> its usage when the call began (its peak was reset then)

    def wrap(self, argv):
        """Enter the cgroup before anything else runs: a shell joins it, then execs."""
        joins = " && ".join(f"echo $$ > {shlex.quote(str(f))}" for f in self.group.procs_files)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh"] + argv

    def unfiltered(self):
        # without the filter, learner code could evict the load group's page cache and grow
        # objects charged there (sockets made at load) into the room: the count is forgeable
        self.measures = False
        self.why = ("the sandbox's seccomp filter could not be installed, so its code could evict "
                    "page cache to hide memory from the meter: memory is not measured here")

    def start(self):
        if self.measures:
            self.baseline = self.group.not_evictable(self.group.load)

    def begin_call(self):
        self.held = None
        self.starts = {}
        if self.baseline is None:
            return
        try:
            if not self.group.begin_call():
                self.why = "the sandbox kept making new processes, so its call could not be measured"
                return
            older = self.group.older  # load, and the groups of the calls measured before
            self.held = max(0, sum(self.group.not_evictable(g) for g in older) - self.baseline)
            for group in older:
                try:
                    self.group.reset_peak(group)
                    self.starts[group] = self.group.usage(group)
                except OSError:  # cgroup v2 before Linux 6.12: no reset; then the group may not grow
                    self.group.freeze(group)
        except (OSError, ValueError, KeyError) as e:
            self.held = None
            self.why = f"the cgroup could not be read ({type(e).__name__}: {e})"

    def read(self, request):
        if self.baseline is None:
            return {"peak": None, "unavailable": self.why if not self.measures else
                    "the sandbox's baseline memory was never read"}
        if self.held is None:
            return {"peak": None, "unavailable": self.why}
        try:
            grown = sum(max(0, self.group.peak(g) - start) for g, start in self.starts.items())
            raw = self.group.peak(self.group.call) + grown + self.held
        except (OSError, ValueError) as e:
            return {"peak": None, "unavailable": f"the cgroup could not be read ({e})"}
        sent = wire.encoded_size(request)
        return {"peak": max(0, raw - sent), "above_baseline": raw, "inputs": sent,
                "held_from_load": self.held, "source": self.describe()}

    def describe(self):
        return f"cgroup v{self.group.version} memory" if self.measures else "memory not measurable"

    def close(self):
        self.group.remove()
