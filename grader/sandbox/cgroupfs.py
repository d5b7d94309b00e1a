"""The cgroup filesystem as the kit touches it: every read, write, mkdir and descriptor of
``cgroup.py`` and ``cgroup_place.py`` goes through ``fs``, one seam that the tests replace
with a fake kernel over a temporary folder (tests/cgroup_fake.py). The fake enforces what
the real one does (no internal processes, controllers offered by the parent, the per
descriptor ``memory.peak`` reset) and makes any write fail, on whatever machine runs them.
"""
from __future__ import annotations

import os
from pathlib import Path


class RealFS:
    """The kernel's own files."""

    def self_cgroup(self) -> str:
        """``/proc/self/cgroup``: one ``id:controllers:path`` line per hierarchy."""
        return Path("/proc/self/cgroup").read_text()

    def pid(self) -> int:
        return os.getpid()

    def read(self, path: Path) -> str:
        return Path(path).read_text()

    def write(self, path: Path, text: str) -> None:
        Path(path).write_text(text)

    def exists(self, path: Path) -> bool:
        return Path(path).exists()

    def is_dir(self, path: Path) -> bool:
        return Path(path).is_dir()

    def writable(self, path: Path) -> bool:
        return Path(path).is_dir() and os.access(path, os.W_OK)

    def mkdir(self, path: Path, exist_ok: bool = False) -> None:
        Path(path).mkdir(exist_ok=exist_ok)

    def rmdir(self, path: Path) -> None:
        Path(path).rmdir()

    def children(self, path: Path) -> list[Path]:
        return list(Path(path).iterdir())

    def open_rw(self, path: Path) -> int:
        return os.open(path, os.O_RDWR)

    def fd_write(self, fd: int, data: bytes) -> None:
        os.write(fd, data)

    def fd_read(self, fd: int) -> bytes:
        return os.pread(fd, 64, 0)

    def close(self, fd: int) -> None:
        os.close(fd)


fs = RealFS()


def read(path: Path, default: str | None = None) -> str:
    """The file's text; ``default`` (when given) where it cannot be read."""
    try:
        return fs.read(path)
    except OSError:
        if default is None:
            raise
        return default
