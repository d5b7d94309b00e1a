"""One control group per sandbox: the kernel's own count of its memory and processes.

Peak memory that decides points is read here, by the grader, from the kernel: the cgroup
charges every page the sandbox touches (every process it forks, shared memory, memfd,
tmpfs files), and nothing inside the sandbox can reset or fake it (it sees no cgroup
files: bubblewrap gives it a cgroup namespace and no mount of them). The same group caps
the whole sandbox's memory and process count, and killing it kills everything in it.

cgroup v2 (a delegated subtree with the memory and pids controllers) and v1 (the memory
and pids hierarchies) are both handled; where neither is writable, ``create`` returns
None and the caller falls back (see ``grader.sandbox.measure``).
"""
from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

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
    """A sandbox's cgroup: ``memory`` and ``pids`` folders (the same one under v2)."""
    version: int
    memory: Path
    pids: Path | None
    _peak_fd: int | None = field(default=None, repr=False)
    """v2: the ``memory.peak`` descriptor whose write reset the peak (resets are per fd)."""

    @property
    def procs_files(self) -> list[Path]:
        folders = {self.memory} | ({self.pids} if self.pids else set())
        return [f / "cgroup.procs" for f in folders]

    # -- measuring -------------------------------------------------------------------
    def usage(self) -> int:
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        return int((self.memory / name).read_text())

    def reset_peak(self) -> None:
        """Start a new high-water mark from the current usage."""
        if self.version == 2:
            self._peak_fd = _open_peak(self.memory)  # v2 (Linux 6.12+): a write resets it for this fd
        else:
            (self.memory / "memory.max_usage_in_bytes").write_text("0")

    def peak(self) -> int:
        if self.version == 2:
            if self._peak_fd is not None:
                return int(os.pread(self._peak_fd, 64, 0))
            return int((self.memory / "memory.peak").read_text())
        return int((self.memory / "memory.max_usage_in_bytes").read_text())

    # -- ending ----------------------------------------------------------------------
    def pids_inside(self) -> set[int]:
        found = set()
        for f in self.procs_files:
            try:
                found.update(int(p) for p in f.read_text().split())
            except (OSError, ValueError):
                pass
        return found

    def kill_all(self, wait_seconds: float = 2.0) -> None:
        """SIGKILL everything in the group, until it is empty (or the bounded wait ends)."""
        kill_file = self.memory / "cgroup.kill"
        deadline = time.monotonic() + wait_seconds
        while True:
            pids = self.pids_inside()
            if not pids or time.monotonic() > deadline:
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
            time.sleep(0.005)

    def remove(self) -> None:
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None
        self.kill_all()
        for folder in {self.memory, self.pids} - {None}:
            for _ in range(50):  # rmdir fails while the last killed process is still exiting
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def _open_peak(folder: Path) -> int | None:
    try:
        fd = os.open(folder / "memory.peak", os.O_RDWR)
        os.write(fd, b"reset\n")
        return fd
    except OSError:
        return None


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
            Group(2 if parent == _own(None) else 1, folder, None).remove()


def create(memory_bytes: int, max_pids: int) -> Group | None:
    """A new cgroup capping memory and processes, or None where none can be made."""
    version, _ = available()
    if not version:
        return None
    reap_stale([p for p in (_own(None), _own("memory"), _own("pids")) if p is not None])
    name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        if version == 2:
            folder = _own(None) / name
            folder.mkdir()
            group = Group(2, folder, folder)
            (folder / "memory.max").write_text(str(memory_bytes))
            (folder / "memory.swap.max").write_text("0") if (folder / "memory.swap.max").exists() else None
            (folder / "pids.max").write_text(str(max_pids))
        else:
            mem = _own("memory") / name
            mem.mkdir()
            pids_parent = _own("pids")
            pids = pids_parent / name if _writable(pids_parent) else None
            if pids is not None:
                pids.mkdir()
            group = Group(1, mem, pids)
            (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
            if pids is not None:
                (pids / "pids.max").write_text(str(max_pids))
    except OSError:
        return None
    return group
