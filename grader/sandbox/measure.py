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

The older groups' memory is counted by what it is (``Group.held``: anonymous, shared and
kernel memory, and swap where counted), never as usage less the file LRU lists: a page freed
with ``MADV_FREE`` sits on the file list yet stays anonymous and can be written again unseen
(issue 35). seccomp refuses ``MADV_FREE`` too.

Without a writable cgroup (or where cgroup v2 keeps no peak: Linux before 5.19) there is no
such meter: a process's own high-water mark counts mapped library pages, which it can unmap
at will. Who is graded decides what happens then (issue 39):

- a learner's own practice (``practice=True``: no course secret, no batch, not nbgrader): the
  practice meter (``practice_meter.PracticeMeter``) gives memory points, and every result says
  "practice meter: not tamper-proof";
- a course: memory is not measured, ``read`` says why, and no memory check gives points.
"""
from __future__ import annotations

import shlex

from backprop_traps.grader.sandbox import cgroup, wire
from backprop_traps.grader.sandbox.meter import (  # noqa: F401 (named here too)
    COURSE_LABEL, IN_A_COURSE, MB, NO_CGROUP, NO_PEAK, PRACTICE, Meter)
from backprop_traps.grader.sandbox.practice_meter import PracticeMeter


def create(limits, isolate: bool, practice: bool = False) -> Meter:
    """The best meter here; with ``practice`` the practice meter where no trustworthy one
    exists. Raises ``cgroup.CgroupError`` where cgroups work but this sandbox's could not
    be made (never a silent fall back)."""
    if not isolate:
        return Meter()
    group = cgroup.create(limits.memory_mb * MB + limits.tmp_mb * MB + 256 * MB,
                          limits.max_processes, limits.cpus)
    if group is not None and group.peak_readable():
        return CgroupMeter(group, practice)
    if practice:
        return PracticeMeter(group)
    if group is None:
        return Meter(f"{cgroup.available()[1]}; {NO_CGROUP}, and {IN_A_COURSE}", COURSE_LABEL)
    meter = CgroupMeter(group)  # it caps the sandbox, but keeps no peak to read
    meter.measures, meter.why, meter.short = False, f"{NO_PEAK}, and {IN_A_COURSE}", COURSE_LABEL
    return meter


class CgroupMeter(Meter):
    """The sandbox's cgroup: tamper-proof while the seccomp filter refuses eviction."""
    measures = True
    whole_sandbox = True

    def __init__(self, group: cgroup.Group, practice: bool = False):
        super().__init__("")
        self.group = group
        self.practice = practice
        self.trusted = True
        self.caps_processes = group.caps_processes
        self.baseline = self.held = None
        self.starts: dict = {}  # older group -> its usage when the call began (its peak was reset then)

    def wrap(self, argv):
        """Enter the cgroup before anything else runs: a shell joins it, then execs."""
        joins = " && ".join(f"echo $$ > {shlex.quote(str(f))}" for f in self.group.procs_files)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh"] + argv

    def unfiltered(self):
        # without the filter, learner code could evict the load group's page cache and grow
        # objects charged there (sockets made at load) into the room: the count is forgeable
        # (still the best meter for a learner's own practice, labelled so)
        self.trusted = False
        self.measures = self.practice
        self.why = ("the sandbox's seccomp filter could not be installed, so its code could evict "
                    f"page cache to hide memory from the meter, and {IN_A_COURSE}")
        self.short = COURSE_LABEL

    def start(self):
        if self.measures:
            self.baseline = self.group.held(self.group.load)

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
            self.held = max(0, sum(self.group.held(g) for g in older) - self.baseline)
            for group in older:
                try:
                    self.group.reset_peak(group)
                    self.starts[group] = self.group.usage(group)
                except OSError:  # cgroup v2 before Linux 6.12: no reset; then the group may not grow
                    self.group.freeze(group)
        except (OSError, ValueError, KeyError) as e:
            self.held = None
            self.why = f"the cgroup could not be read ({type(e).__name__}: {e})"

    def read(self, request, reply=None):
        if self.baseline is None:
            return {"peak": None, "meter": self.label, "unavailable": self.why if not self.measures else
                    "the sandbox's baseline memory was never read"}
        if self.held is None:
            return {"peak": None, "unavailable": self.why, "meter": self.label}
        try:
            grown = sum(max(0, self.group.peak(g) - start) for g, start in self.starts.items())
            raw = self.group.peak(self.group.call) + grown + self.held
        except (OSError, ValueError) as e:
            return {"peak": None, "unavailable": f"the cgroup could not be read ({e})", "meter": self.label}
        sent = wire.encoded_size(request)
        return {"peak": max(0, raw - sent), "above_baseline": raw, "inputs": sent,
                "held_from_load": self.held, "source": self.describe(), "meter": self.label}

    def describe(self):
        if not self.measures:
            return "memory not measurable"
        return f"cgroup v{self.group.version} memory" + ("" if self.trusted else f" ({PRACTICE})")

    @property
    def label(self):
        if not self.measures:
            return super().label
        return f"cgroup v{self.group.version}: tamper-proof" if self.trusted else PRACTICE

    def close(self):
        self.group.remove()
