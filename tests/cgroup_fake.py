"""A fake cgroup kernel over a temporary folder, for ``cgroupfs.fs`` (tests/sandbox/test_cgroup_fake.py).

It lays out a v1 or v2 hierarchy as plain folders and files and enforces the rules the kit
relies on: a v2 cgroup enables for its children only controllers it is offered (a write that
names another fails as a whole, ENOENT), and, outside the root, not while it holds processes
(EBUSY); a process moves by a write to the target's ``cgroup.procs``; ``memory.peak`` resets
per descriptor (Linux 6.12+) or not at all (before); ``cgroup.kill`` empties a subtree. Any
write can be made to fail (``fail``), and any folder read-only (``read_only``).
"""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from backprop_traps.grader.sandbox.cgroupfs import RealFS

V1_FILES = {"memory": {"memory.limit_in_bytes": "9223372036854771712", "memory.usage_in_bytes": "0",
                       "memory.max_usage_in_bytes": "0", "memory.stat": "cache 0\nrss 0\nshmem 0\n",
                       "memory.kmem.usage_in_bytes": "0"},
            "pids": {"pids.max": "max"}, "cpu": {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "-1"}}
V2_FILES = {"memory": {"memory.max": "max", "memory.current": "0", "memory.peak": "0",
                       "memory.swap.max": "max", "memory.swap.current": "0",
                       "memory.stat": "anon 0\nfile 0\nkernel 0\nshmem 0\nsock 0\n"},
            "pids": {"pids.max": "max"}, "cpu": {"cpu.max": "max 100000"}}


class FakeKernel(RealFS):
    def __init__(self, root: Path, version: int = 2, own: str = "/", offered=("memory", "pids", "cpu"),
                 enabled=("memory", "pids"), pids=(4242, 4243), peak_reset: bool = True,
                 has_peak: bool = True, v1_controllers=("memory", "pids", "cpu")):
        self.root, self.version, self.me = Path(root), version, pids[0]
        self.peak_reset, self.has_peak = peak_reset, has_peak
        self.fail: dict[str, int] = {}
        """File name (or name=content) -> errno its writes fail with."""
        self.read_only: set[Path] = set()
        self.writes: list[tuple[str, str]] = []
        self._fds: dict[int, list] = {}
        self.fd_peaks: dict[Path, int] = {}
        """memory.peak as seen through a descriptor that reset it: path -> peak since then."""
        self.root.mkdir(parents=True, exist_ok=True)
        if version == 2:
            self._populate(self.root, offered, root_cgroup=True)
            (self.root / "cgroup.subtree_control").write_text(" ".join(enabled))
            folder = self.root
            parts = own.strip("/").split("/") if own.strip("/") else []
            for i, part in enumerate(parts):
                folder = folder / part
                self.mkdir(folder)
                if i < len(parts) - 1:  # every level above the grader's enables ``enabled``
                    self.write(folder / "cgroup.subtree_control", " ".join(
                        f"+{c}" for c in enabled if c in self._words(folder / "cgroup.controllers")))
            self._set_procs(folder, pids)
            self.own_v2 = folder
        else:
            for name in v1_controllers:
                folder = self.root / name
                folder.mkdir(parents=True)
                self._v1_files(folder, name)
                for part in own.strip("/").split("/") if own.strip("/") else []:
                    folder = folder / part
                    folder.mkdir()
                    self._v1_files(folder, name)
                self._set_procs(folder, pids)
        self.writes.clear()

    # -- layout --------------------------------------------------------------------------
    @staticmethod
    def _words(path: Path) -> list[str]:
        return path.read_text().split() if path.exists() else []

    def _v1_files(self, folder: Path, name: str) -> None:
        (folder / "cgroup.procs").write_text("")
        for file, text in V1_FILES.get(name, {}).items():
            (folder / file).write_text(text)

    def _populate(self, folder: Path, offered, root_cgroup: bool = False) -> None:
        (folder / "cgroup.controllers").write_text(" ".join(offered))
        (folder / "cgroup.subtree_control").write_text("")
        (folder / "cgroup.procs").write_text("")
        if not root_cgroup:
            (folder / "cgroup.kill").write_text("0")
        for name in offered if not root_cgroup else ():
            for file, text in V2_FILES.get(name, {}).items():
                if file != "memory.peak" or self.has_peak:
                    (folder / file).write_text(text)

    def _all_procs(self):
        return list(self.root.rglob("cgroup.procs"))

    def _set_procs(self, folder: Path, pids) -> None:
        (folder / "cgroup.procs").write_text("".join(f"{p}\n" for p in pids))

    def procs(self, folder: Path) -> list[int]:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]

    def where(self, pid: int, hierarchy: Path | None = None) -> Path | None:
        for procs in (hierarchy or self.root).rglob("cgroup.procs"):
            if pid in self.procs(procs.parent):
                return procs.parent
        return None

    # -- the seam --------------------------------------------------------------------------
    def self_cgroup(self) -> str:
        if self.version == 2:
            return f"0::/{self.where(self.me).relative_to(self.root)}".replace("/.", "/") + "\n"
        lines = []
        for i, name in enumerate(sorted(p.name for p in self.root.iterdir() if p.name != "unified")):
            where = self.where(self.me, self.root / name)
            lines.append(f"{i + 1}:{name}:/{where.relative_to(self.root / name)}".replace("/.", "/"))
        return "\n".join(lines + ["0::/"]) + "\n"

    def pid(self) -> int:
        return self.me

    def writable(self, path: Path) -> bool:
        return Path(path).is_dir() and Path(path) not in self.read_only

    def _check(self, path: Path, text: str = "") -> None:
        path = Path(path)
        for key in (path.name, f"{path.name}={text.strip()}"):
            if key in self.fail:
                raise OSError(self.fail[key], os.strerror(self.fail[key]), str(path))
        if path.parent in self.read_only:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))

    def mkdir(self, path: Path, exist_ok: bool = False) -> None:
        path = Path(path)
        self._check(path.parent / "mkdir")
        if path.exists() and exist_ok:
            return
        path.mkdir()
        if self.version == 2:
            self._populate(path, self._words(path.parent / "cgroup.subtree_control"))
        else:
            self._v1_files(path, next(p for p in path.relative_to(self.root).parts))

    def rmdir(self, path: Path) -> None:
        path = Path(path)
        if self.procs(path) or any(p.is_dir() for p in path.iterdir()):
            raise OSError(errno.EBUSY, "Device or resource busy", str(path))
        shutil.rmtree(path)

    def write(self, path: Path, text: str) -> None:
        path = Path(path)
        self._check(path, text)
        self.writes.append((str(path.relative_to(self.root)), text))
        name, folder = path.name, path.parent
        if name == "cgroup.subtree_control" and self.version == 2:
            offered = self._words(folder / "cgroup.controllers")
            tokens = text.split()
            if any(t[1:] not in offered for t in tokens):
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))
            if folder != self.root and self.procs(folder) and any(t.startswith("+") for t in tokens):
                raise OSError(errno.EBUSY, "Device or resource busy", str(path))
            on = set(self._words(path))
            for t in tokens:
                (on.add if t[0] == "+" else on.discard)(t[1:])
            path.write_text(" ".join(sorted(on)))
            for child in (p for p in folder.iterdir() if p.is_dir()):
                (child / "cgroup.controllers").write_text(" ".join(sorted(on)))
                for c in on:
                    for file, value in V2_FILES.get(c, {}).items():
                        if not (child / file).exists() and (file != "memory.peak" or self.has_peak):
                            (child / file).write_text(value)
        elif name == "cgroup.procs":
            pid = int(text)
            if self.version == 2 and folder != self.root and self._words(folder / "cgroup.subtree_control"):
                raise OSError(errno.EBUSY, "Device or resource busy", str(path))
            hierarchy = self.root if self.version == 2 else self.root / path.relative_to(self.root).parts[0]
            old = self.where(pid, hierarchy)
            if old is None:
                raise ProcessLookupError(errno.ESRCH, "No such process")
            self._set_procs(old, [p for p in self.procs(old) if p != pid])
            self._set_procs(folder, self.procs(folder) + [pid])
        elif name == "cgroup.kill":
            for procs in folder.rglob("cgroup.procs"):
                procs.write_text("")
        elif name == "memory.max_usage_in_bytes":  # v1: a reset starts again from the usage now
            path.write_text((folder / "memory.usage_in_bytes").read_text())
        else:
            path.write_text(text)

    def open_rw(self, path: Path) -> int:
        self._check(path)
        if not Path(path).exists():
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))
        fd = 1000 + len(self._fds)
        self._fds[fd] = [Path(path), None]
        return fd

    def fd_write(self, fd: int, data: bytes) -> None:
        path, _ = self._fds[fd]
        self._check(path, data.decode())
        if not self.peak_reset:  # before Linux 6.12: memory.peak is read-only
            raise OSError(errno.EINVAL, "Invalid argument", str(path))
        self._fds[fd][1] = int((path.parent / "memory.current").read_text())

    def fd_read(self, fd: int) -> bytes:
        path, reset_at = self._fds[fd]
        peak = int(path.read_text())
        return str(peak if reset_at is None else max(reset_at, self.fd_peaks.get(path, reset_at))).encode()

    def close(self, fd: int) -> None:
        self._fds.pop(fd, None)
