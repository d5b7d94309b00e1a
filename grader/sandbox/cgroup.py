"""One control group per sandbox: the kernel's own count of its memory and processes.

Peak memory that decides points is read here, by the grader, from the kernel: the cgroup
charges every page the sandbox touches (every process it forks, shared memory, memfd,
tmpfs files), and nothing inside the sandbox can reset or fake it (it sees no cgroup
files: bubblewrap gives it a cgroup namespace and no mount of them). The same group caps
the whole sandbox's memory and process count, and killing it kills everything in it.

cgroup v2 and v1 are both handled; where the groups go (as root, in a delegated v2 subtree,
in the v1 hierarchies) is ``cgroup_place``'s decision. Where no cgroup is writable, ``create``
returns None and the caller falls back (see ``backprop_traps.grader.sandbox.measure``). Every
file access goes through ``cgroupfs`` (the seam the fake-kernel tests replace).
"""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from backprop_traps.grader.sandbox import cgroup_place, cgroupfs
from backprop_traps.grader.sandbox.cleanup import pauses

ROOT = cgroup_place.ROOT
DISABLE = "BACKPROP_TRAPS_NO_CGROUP"
"""Set to 1 to act as if no cgroup were writable (tests the fallback on any machine)."""
_own = cgroup_place.own

HELD_V1 = ("rss", "shmem")
"""cgroup v1 ``memory.stat``: anonymous memory (wherever its pages sit on the LRU lists: a
page freed with MADV_FREE sits on the *file* list, yet stays anonymous) and shared memory
(tmpfs, SysV, memfd); kernel memory is ``memory.kmem.usage_in_bytes``."""
HELD_V2 = ("anon", "shmem", "sock")
"""cgroup v2 ``memory.stat``: the same, plus socket buffers; kernel memory is ``kernel``
(Linux 5.18+) or, before, the sum of ``KERNEL_V2``."""
KERNEL_V2 = ("kernel_stack", "pagetables", "percpu", "slab", "vmalloc")


@dataclass
class Group:
    """A sandbox's cgroup: ``memory`` and ``pids`` folders (the same one under v2) that carry
    the limits and hold no process themselves. The sandbox's processes start in ``memory/load``;
    each measured call moves them all into a fresh ``memory/call-N`` (``begin_call``), whose
    peak starts at zero: pages charged before the call (the libraries' page cache, which learner
    code might evict; what earlier calls left) stay behind in the ``older`` groups, where the
    meter reads what they still hold (``measure.CgroupMeter``)."""
    version: int
    memory: Path
    pids: Path | None
    calls: list = field(default_factory=list)
    """``memory/call-1``, ``call-2``, ...: one per measured call, the newest last."""
    cpu: Path | None = None
    """v1: the ``cpu`` folder with the sandbox's CPU quota (v2: ``memory``'s own ``cpu.max``)."""
    _peak_fds: dict = field(default_factory=dict, repr=False)
    """v2: folder -> the ``memory.peak`` descriptor a reset was written to (resets are per fd)."""

    @property
    def load(self) -> Path:
        return self.memory / "load"

    @property
    def call(self) -> Path | None:
        """The newest call's group: where the sandbox's processes are while it is measured."""
        return self.calls[-1] if self.calls else None

    @property
    def older(self) -> list[Path]:
        """The groups the processes have left: ``load`` and every call's but the newest."""
        return [self.load] + self.calls[:-1]

    @property
    def caps_processes(self) -> bool:
        """Whether a pids controller caps the sandbox's processes (else it may not fork)."""
        return self.pids is not None

    @property
    def procs_files(self) -> list[Path]:
        """Where a new sandbox process writes its pid: the ``load`` group (v1: and ``pids``)."""
        extra = [self.pids, self.cpu] if self.version == 1 else []
        return [self.load / "cgroup.procs"] + [f / "cgroup.procs" for f in extra if f is not None]

    # -- measuring -------------------------------------------------------------------
    def _swap_counted(self) -> bool:
        return self.version == 1 and cgroupfs.fs.exists(self.memory / "memory.memsw.usage_in_bytes")

    def _read_int(self, folder: Path, v1: str, v2: str) -> int:
        return int(cgroupfs.fs.read(folder / (v1 if self.version == 1 else v2)))

    def _swap_v2(self, folder: Path) -> int:
        swap = folder / "memory.swap.current"
        return int(cgroupfs.fs.read(swap)) if self.version == 2 and cgroupfs.fs.exists(swap) else 0

    def usage(self, folder: Path) -> int:
        """Memory charged to ``folder`` now (and swap, where swap is counted)."""
        if self._swap_counted():
            return self._read_int(folder, "memory.memsw.usage_in_bytes", "")
        return self._read_int(folder, "memory.usage_in_bytes", "memory.current") + self._swap_v2(folder)

    def held(self, folder: Path) -> int:
        """What ``folder`` holds that no eviction can lower, counted by what it is (issue 35):
        anonymous memory on whatever LRU list (MADV_FREE moves it to the file list), shared
        memory, kernel memory and swap where counted. Page cache is never in it."""
        stat = {}
        for line in cgroupfs.fs.read(folder / "memory.stat").splitlines():
            key, _, value = line.partition(" ")
            stat[key] = int(value) if value.strip().isdigit() else 0
        if self.version == 1:
            held = sum(stat.get(f"total_{k}", stat.get(k, 0)) for k in HELD_V1)
            kmem = folder / "memory.kmem.usage_in_bytes"
            held += int(cgroupfs.fs.read(kmem)) if cgroupfs.fs.exists(kmem) else 0
            return held + (stat.get("total_swap", stat.get("swap", 0)) if self._swap_counted() else 0)
        kernel = stat["kernel"] if "kernel" in stat else sum(stat.get(k, 0) for k in KERNEL_V2)
        return sum(stat.get(k, 0) for k in HELD_V2) + kernel + self._swap_v2(folder)

    not_evictable = held  # its former name

    def peak(self, folder: Path) -> int:
        """The high-water mark of ``folder`` since it was made (or reset)."""
        if self._swap_counted():
            return self._read_int(folder, "memory.memsw.max_usage_in_bytes", "")
        if folder in self._peak_fds:
            return int(cgroupfs.fs.fd_read(self._peak_fds[folder]))
        return self._read_int(folder, "memory.max_usage_in_bytes", "memory.peak")

    def reset_peak(self, folder: Path) -> None:
        """Start ``folder``'s high-water mark again from its usage now (v2: Linux 6.12+)."""
        if self.version == 1:
            name = "memory.memsw.max_usage_in_bytes" if self._swap_counted() else "memory.max_usage_in_bytes"
            cgroupfs.fs.write(folder / name, "0")
        else:  # only reads through this same descriptor see the reset
            fd = self._peak_fds.get(folder)
            opened = fd is None
            if opened:
                fd = cgroupfs.fs.open_rw(folder / "memory.peak")
            try:
                cgroupfs.fs.fd_write(fd, b"reset\n")
            except OSError:
                if opened:
                    cgroupfs.fs.close(fd)
                raise
            self._peak_fds[folder] = fd

    def freeze(self, folder: Path) -> None:
        """Cap ``folder`` at its usage now: it cannot grow (where its peak cannot be reset)."""
        name = "memory.limit_in_bytes" if self.version == 1 else "memory.max"
        cgroupfs.fs.write(folder / name, str(self.usage(folder)))

    def peak_readable(self) -> bool:
        """Whether this kernel keeps a peak to read (cgroup v2's ``memory.peak``: Linux 5.19+)."""
        return self.version == 1 or cgroupfs.fs.exists(self.load / "memory.peak")

    def begin_call(self, tries: int = 50) -> bool:
        """Move every process of the sandbox into a fresh group of its own, ``call-N`` (made
        here); False when some kept appearing (a process forking without end)."""
        new = self.memory / f"call-{len(self.calls) + 1}"
        cgroupfs.fs.mkdir(new)
        self.calls.append(new)
        for _ in range(tries):
            pids = [pid for folder in self.older for pid in _pids(folder / "cgroup.procs")]
            if not pids:
                return True
            for pid in pids:
                try:
                    cgroupfs.fs.write(self.call / "cgroup.procs", str(pid))
                except ProcessLookupError:  # it exited meanwhile (any other error: no number)
                    pass
        return False

    # -- ending ----------------------------------------------------------------------
    def _folders(self) -> list[Path]:
        """Innermost first (the order ``rmdir`` needs)."""
        return [f for f in (*reversed(self.calls), self.load, self.memory,
                            self.pids if self.pids != self.memory else None, self.cpu) if f is not None]

    def pids_inside(self) -> set[int]:
        found = set()
        for folder in self._folders():
            found.update(_pids(folder / "cgroup.procs"))
        return found

    def kill_all(self, wait_seconds: float = 2.0) -> None:
        """SIGKILL everything in the group, until it is empty (or the bounded wait ends)."""
        kill_file = self.memory / "cgroup.kill"
        for _ in pauses(wait_seconds):
            pids = self.pids_inside()
            if not pids:
                return
            if self.version == 2 and cgroupfs.fs.exists(kill_file):
                try:
                    cgroupfs.fs.write(kill_file, "1")
                except OSError:
                    pass
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def remove(self) -> None:
        for fd in self._peak_fds.values():
            cgroupfs.fs.close(fd)
        self._peak_fds.clear()
        self.kill_all()
        for folder in self._folders():
            for _ in pauses(0.5):  # rmdir fails while the last killed process is still exiting
                try:
                    cgroupfs.fs.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    pass


def _pids(procs: Path) -> list[int]:
    return cgroup_place.pids_in(procs.parent)


def placement() -> cgroup_place.Placement:
    """Where sandbox groups go here (none while ``DISABLE`` is set)."""
    if os.environ.get(DISABLE) == "1":
        return cgroup_place.Placement(0, f"cgroups switched off ({DISABLE}=1)")
    return cgroup_place.find()


def available() -> tuple[int, str]:
    """(cgroup version usable for sandboxes, or 0; a sentence saying which subtree and
    controllers, or why none)."""
    place = placement()
    return place.version, place.detail


def peak_readable(place: cgroup_place.Placement | None = None) -> bool:
    """Whether the kernel keeps a peak for the groups made here (v2's ``memory.peak``: 5.19+)."""
    place = place or placement()
    return place.version == 1 or (place.version == 2 and cgroupfs.fs.exists(place.memory / "memory.peak"))


PREFIX = "backprop-traps-"


def sandbox_parents(place: cgroup_place.Placement | None = None) -> list[Path]:
    """The folders that hold sandbox groups here (where a leftover one would be)."""
    place = place or placement()
    return list(dict.fromkeys(p for p in (place.memory, place.pids, place.cpu) if p is not None))


def reap_stale(parents: list[Path], version: int) -> None:
    """Empty and remove the sandbox cgroups of graders that are gone (killed mid-grade):
    whatever was still running in them dies now, and nothing is left on the host."""
    for parent in parents:
        try:
            entries = cgroupfs.fs.children(parent)
        except OSError:
            continue
        for folder in entries:
            if not folder.name.startswith(PREFIX) or folder.name == cgroup_place.LEAF:
                continue
            try:
                owner = int(folder.name[len(PREFIX):].split("-")[0])
                os.kill(owner, 0)
                continue  # its grader is alive: its own close() will remove it
            except ProcessLookupError:
                pass
            except (ValueError, PermissionError):
                continue
            try:
                calls = sorted((f for f in cgroupfs.fs.children(folder)
                                if f.name.startswith("call") and cgroupfs.fs.is_dir(f)),
                               key=lambda f: (len(f.name), f.name))  # call-2 before call-10
            except OSError:
                calls = []
            Group(version, folder, None, calls).remove()


class CgroupError(OSError):
    """Cgroups are usable here, yet this sandbox's could not be made: the sandbox does not
    start without it (never silently on fewer layers)."""


PERIOD_US = 100_000


def create(memory_bytes: int, max_pids: int, cpus: float = 1.0) -> Group | None:
    """A new cgroup capping memory and processes, or None where cgroups are not usable
    here at all; raises ``CgroupError`` where they are but this one could not be made."""
    place = placement()
    if not place.version:
        return None
    reap_stale(sandbox_parents(place), place.version)
    quota = f"{max(int(cpus * PERIOD_US), 1000)} {PERIOD_US}"  # CPU time per period, whole sandbox
    name = f"{PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    write = cgroupfs.fs.write
    group = None
    try:
        if place.version == 2:
            folder = place.memory / name
            cgroupfs.fs.mkdir(folder)
            group = Group(2, folder, folder if place.caps_processes else None)
            write(folder / "memory.max", str(memory_bytes))
            if cgroupfs.fs.exists(folder / "memory.swap.max"):
                write(folder / "memory.swap.max", "0")
            if group.pids is not None:
                write(folder / "pids.max", str(max_pids))
            if "memory" not in cgroup_place.enable(folder, ("memory", "pids")):  # for load and call-N
                raise OSError(5, "the memory controller could not be enabled for its calls")
            if cgroupfs.fs.exists(folder / "cpu.max"):  # where the cpu controller is delegated too
                write(folder / "cpu.max", quota)
        else:
            cgroupfs.fs.mkdir(place.memory / name)
            group = Group(1, place.memory / name, None)
            if place.pids is not None:
                cgroupfs.fs.mkdir(place.pids / name)
                group.pids = place.pids / name
                write(group.pids / "pids.max", str(max_pids))
            if place.cpu is not None:
                cgroupfs.fs.mkdir(place.cpu / name)
                group.cpu = place.cpu / name
                write(group.cpu / "cpu.cfs_period_us", str(PERIOD_US))
                write(group.cpu / "cpu.cfs_quota_us", quota.split()[0])
            write(group.memory / "memory.limit_in_bytes", str(memory_bytes))
            if group._swap_counted():  # memory and swap together: swapping out hides nothing
                write(group.memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
        cgroupfs.fs.mkdir(group.load)
    except OSError as e:
        if group is not None:
            group.remove()
        raise CgroupError(e.errno, f"the sandbox's cgroup could not be made ({e.strerror or e})") from None
    return group
