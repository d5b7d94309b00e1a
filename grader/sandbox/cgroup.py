"""One control group per sandbox: the kernel's own count of its memory and processes.

Peak memory that decides points is read here, by the grader, from the kernel: the cgroup
charges every page the sandbox touches (every process it forks, shared memory, memfd,
tmpfs files), and nothing inside the sandbox can reset or fake it (it sees no cgroup
files: bubblewrap gives it a cgroup namespace and no mount of them). The same group caps
the whole sandbox's memory and process count, and killing it kills everything in it.

cgroup v2 (a delegated subtree with the memory and pids controllers) and v1 (the memory
and pids hierarchies) are both handled; where neither is writable, ``create`` returns
None and the caller falls back (see ``backprop_traps.grader.sandbox.measure``).
"""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from backprop_traps.grader.sandbox.cleanup import pauses

ROOT = Path(os.environ.get("BACKPROP_TRAPS_CGROUP_ROOT", "/sys/fs/cgroup"))
DISABLE = "BACKPROP_TRAPS_NO_CGROUP"
"""Set to 1 to act as if no cgroup were writable (tests the fallback on any machine)."""


def _own(controller: str | None) -> Path | None:
    """This process's cgroup in the hierarchy of ``controller`` (None: the v2 one)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller is None and names == "") or (controller and controller in names.split(",")):
            base = ROOT if controller is None and (ROOT / "cgroup.controllers").exists() else \
                ROOT / ("unified" if controller is None else controller)
            return base / path.lstrip("/")
    return None


def _writable(folder: Path | None) -> bool:
    return folder is not None and folder.is_dir() and os.access(folder, os.W_OK)


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
    def procs_files(self) -> list[Path]:
        """Where a new sandbox process writes its pid: the ``load`` group (v1: and ``pids``)."""
        extra = [self.pids, self.cpu] if self.version == 1 else []
        return [self.load / "cgroup.procs"] + [f / "cgroup.procs" for f in extra if f is not None]

    # -- measuring -------------------------------------------------------------------
    def _swap_counted(self) -> bool:
        return self.version == 1 and (self.memory / "memory.memsw.usage_in_bytes").exists()

    def _read_int(self, folder: Path, v1: str, v2: str) -> int:
        return int((folder / (v1 if self.version == 1 else v2)).read_text())

    def usage(self, folder: Path) -> int:
        """Memory charged to ``folder`` now (and swap, where swap is counted)."""
        if self._swap_counted():
            return self._read_int(folder, "memory.memsw.usage_in_bytes", "")
        used = self._read_int(folder, "memory.usage_in_bytes", "memory.current")
        swap = folder / "memory.swap.current"
        return used + (int(swap.read_text()) if self.version == 2 and swap.exists() else 0)

    def not_evictable(self, folder: Path) -> int:
        """``usage`` less the file pages of the page cache: what no eviction can lower
        (anonymous, shared and kernel memory, and swap where counted)."""
        stat = dict(line.split() for line in (folder / "memory.stat").read_text().splitlines())
        return self.usage(folder) - int(stat["active_file"]) - int(stat["inactive_file"])

    def peak(self, folder: Path) -> int:
        """The high-water mark of ``folder`` since it was made (or reset)."""
        if self._swap_counted():
            return self._read_int(folder, "memory.memsw.max_usage_in_bytes", "")
        if folder in self._peak_fds:
            return int(os.pread(self._peak_fds[folder], 64, 0))
        return self._read_int(folder, "memory.max_usage_in_bytes", "memory.peak")

    def reset_peak(self, folder: Path) -> None:
        """Start ``folder``'s high-water mark again from its usage now (v2: Linux 6.12+)."""
        if self.version == 1:
            name = "memory.memsw.max_usage_in_bytes" if self._swap_counted() else "memory.max_usage_in_bytes"
            (folder / name).write_text("0")
        else:  # only reads through this same descriptor see the reset
            fd = self._peak_fds.get(folder)
            opened = fd is None
            if opened:
                fd = os.open(folder / "memory.peak", os.O_RDWR)
            try:
                os.write(fd, b"reset\n")
            except OSError:
                if opened:
                    os.close(fd)
                raise
            self._peak_fds[folder] = fd

    def freeze(self, folder: Path) -> None:
        """Cap ``folder`` at its usage now: it cannot grow (where its peak cannot be reset)."""
        name = "memory.limit_in_bytes" if self.version == 1 else "memory.max"
        (folder / name).write_text(str(self.usage(folder)))

    def begin_call(self, tries: int = 50) -> bool:
        """Move every process of the sandbox into a fresh group of its own, ``call-N`` (made
        here); False when some kept appearing (a process forking without end)."""
        new = self.memory / f"call-{len(self.calls) + 1}"
        new.mkdir()
        self.calls.append(new)
        for _ in range(tries):
            pids = [pid for folder in self.older for pid in _pids(folder / "cgroup.procs")]
            if not pids:
                return True
            for pid in pids:
                try:
                    (self.call / "cgroup.procs").write_text(str(pid))
                except OSError:  # it exited meanwhile
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
            if self.version == 2 and kill_file.exists():
                try:
                    kill_file.write_text("1")
                except OSError:
                    pass
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def remove(self) -> None:
        for fd in self._peak_fds.values():
            os.close(fd)
        self._peak_fds.clear()
        self.kill_all()
        for folder in self._folders():
            for _ in pauses(0.5):  # rmdir fails while the last killed process is still exiting
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    pass


def _pids(procs: Path) -> list[int]:
    try:
        return [int(p) for p in procs.read_text().split()]
    except (OSError, ValueError):
        return []


def available() -> tuple[int, str]:
    """(cgroup version usable for sandboxes, or 0; a sentence saying why)."""
    if os.environ.get(DISABLE) == "1":
        return 0, f"cgroups switched off ({DISABLE}=1)"
    v2 = _own(None)
    if _writable(v2) and {"memory", "pids"} <= set(_read(v2 / "cgroup.subtree_control").split()):
        return 2, f"cgroup v2 at {v2}"
    mem, pids = _own("memory"), _own("pids")
    if _writable(mem):
        return 1, f"cgroup v1 at {mem}" + ("" if _writable(pids) else " (no pids controller)")
    return 0, "no writable cgroup (run as root, or with a delegated cgroup v2 subtree)"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


PREFIX = "backprop-traps-"


def reap_stale(parents: list[Path]) -> None:
    """Empty and remove the sandbox cgroups of graders that are gone (killed mid-grade):
    whatever was still running in them dies now, and nothing is left on the host."""
    for parent in parents:
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for folder in entries:
            if not folder.name.startswith(PREFIX):
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
                calls = sorted((f for f in folder.iterdir() if f.name.startswith("call") and f.is_dir()),
                               key=lambda f: (len(f.name), f.name))  # call-2 before call-10
            except OSError:
                calls = []
            Group(2 if parent == _own(None) else 1, folder, None, calls).remove()


class CgroupError(OSError):
    """Cgroups are usable here, yet this sandbox's could not be made: the sandbox does not
    start without it (never silently on fewer layers)."""


PERIOD_US = 100_000


def create(memory_bytes: int, max_pids: int, cpus: float = 1.0) -> Group | None:
    """A new cgroup capping memory and processes, or None where cgroups are not usable
    here at all; raises ``CgroupError`` where they are but this one could not be made."""
    version, _ = available()
    if not version:
        return None
    reap_stale([p for p in (_own(None), _own("memory"), _own("pids"), _own("cpu")) if p is not None])
    quota = f"{max(int(cpus * PERIOD_US), 1000)} {PERIOD_US}"  # CPU time per period, whole sandbox
    name = f"{PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    try:
        if version == 2:
            folder = _own(None) / name
            folder.mkdir()
            group = Group(2, folder, folder)
            (folder / "memory.max").write_text(str(memory_bytes))
            (folder / "memory.swap.max").write_text("0") if (folder / "memory.swap.max").exists() else None
            (folder / "pids.max").write_text(str(max_pids))
            (folder / "cgroup.subtree_control").write_text("+memory +pids")  # for load and call
            if (folder / "cpu.max").exists():  # where the cpu controller is delegated too
                (folder / "cpu.max").write_text(quota)
        else:
            mem = _own("memory") / name
            mem.mkdir()
            pids_parent = _own("pids")
            pids = pids_parent / name if _writable(pids_parent) else None
            if pids is not None:
                pids.mkdir()
            cpu_parent = _own("cpu")
            cpu = cpu_parent / name if _writable(cpu_parent) else None
            if cpu is not None:
                cpu.mkdir()
            group = Group(1, mem, pids, cpu=cpu)
            if cpu is not None:
                (cpu / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (cpu / "cpu.cfs_quota_us").write_text(quota.split()[0])
            (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
            if group._swap_counted():  # memory and swap together: swapping out hides nothing
                (mem / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            if pids is not None:
                (pids / "pids.max").write_text(str(max_pids))
        group.load.mkdir()
    except OSError as e:
        if "group" in locals():
            group.remove()
        raise CgroupError(e.errno, f"the sandbox's cgroup could not be made ({e.strerror or e})") from None
    return group
