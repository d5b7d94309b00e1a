"""Where this grader makes its sandboxes' cgroups (``find``), decided once per process.

cgroup v1 (the memory, pids and cpu hierarchies): the grader's own folder in each, where
writable (root). Kept as it always was.

cgroup v2, the unified hierarchy (the default on current Linux): a cgroup that holds
processes cannot enable controllers for its children ("no internal processes"), and the
grader's own cgroup always holds the grader. So, in this order:

1. the grader already sits in a leaf of ours (``backprop-traps-grader``): a batch's grading
   processes, started after their parent placed itself. Its parent, as that grader set it up;
2. as root (the root cgroup writable): ``backprop-traps``, a cgroup of the kit's own directly
   under the root, which never holds a process;
3. a writable subtree (delegated, e.g. by ``systemd-run --user --scope -p Delegate=yes``):
   systemd's pattern. A leaf ``backprop-traps-grader`` under the grader's cgroup, every process
   of that cgroup moved into it, then the controllers enabled on the now empty cgroup; the
   sandboxes' groups are siblings of the leaf.

Controllers are enabled one at a time, each only where the parent offers it: a subtree that
delegates memory but not pids refuses ``+memory +pids`` as a whole (ENOENT). Memory is
needed (the meter and the cap). pids is taken where offered; without it the sandbox may not
fork (``Placement.caps_processes``), so memory alone is still a trustworthy meter.
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from backprop_traps.grader.sandbox import cgroupfs, systemd_scope

ROOT = Path(os.environ.get("BACKPROP_TRAPS_CGROUP_ROOT", "/sys/fs/cgroup"))
KIT = "backprop-traps"
"""v2, as root: the kit's own cgroup directly under the root."""
LEAF = "backprop-traps-grader"
"""v2, in a delegated subtree: the leaf the grader's processes move into."""
WANTED = ("memory", "pids", "cpu")


@dataclass(frozen=True)
class Placement:
    """Where sandbox groups go, or why nowhere (``version`` 0)."""
    version: int
    detail: str
    """One sentence: the version, the subtree and the controllers used (or why none)."""
    memory: Path | None = None
    """The parent of the sandboxes' memory groups (v2: of their only group)."""
    pids: Path | None = None
    """The parent of their pids groups: v1 where that hierarchy is writable; v2 ``memory``
    itself where pids is enabled there; else None (the sandbox may not fork)."""
    cpu: Path | None = None
    """v1: the parent of their cpu groups (the CPU quota); v2 uses ``memory``'s ``cpu.max``."""
    controllers: tuple[str, ...] = ()

    @property
    def caps_processes(self) -> bool:
        return self.pids is not None


def own(controller: str | None) -> Path | None:
    """This process's cgroup in the hierarchy of ``controller`` (None: the v2 one)."""
    try:
        lines = cgroupfs.fs.self_cgroup().splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            _, names, path = line.split(":", 2)
        except ValueError:
            continue
        if (controller is None and names == "") or (controller and controller in names.split(",")):
            base = v2_base() if controller is None else ROOT / controller
            return None if base is None else base / path.lstrip("/")
    return None


def v2_base() -> Path | None:
    """The unified hierarchy's mount: the root itself (pure v2), or ``unified`` (hybrid)."""
    for base in (ROOT, ROOT / "unified"):
        if cgroupfs.fs.exists(base / "cgroup.controllers"):
            return base
    return None


def _words(path: Path) -> list[str]:
    return cgroupfs.read(path, "").split()


def pids_in(folder: Path) -> list[int]:
    try:
        return [int(p) for p in cgroupfs.fs.read(folder / "cgroup.procs").split()]
    except (OSError, ValueError):
        return []


def enable(folder: Path, wanted=WANTED) -> tuple[str, ...]:
    """Enable for ``folder``'s children each controller of ``wanted`` it offers, one write
    each; returns those enabled. A refused memory raises; any other is left off."""
    offered = _words(folder / "cgroup.controllers")
    on = set(_words(folder / "cgroup.subtree_control"))
    for name in wanted:
        if name in on or name not in offered:
            continue
        try:
            cgroupfs.fs.write(folder / "cgroup.subtree_control", f"+{name}")
            on.add(name)
        except OSError:
            if name == "memory":
                raise
    return tuple(n for n in wanted if n in on)


def _placed(parent: Path, controllers: tuple, how: str) -> Placement:
    pids = parent if "pids" in controllers else None
    said = ", ".join(controllers) + ("" if pids else " (no pids controller: the sandbox may not fork)")
    return Placement(2, f"cgroup v2, {how}: {parent}, controllers {said}", parent, pids, None, controllers)


def _as_root(base: Path) -> Placement | None:
    """Step 2: the kit's own cgroup under the root (None where the root will not have it)."""
    kit = base / KIT
    try:
        enable(base, ("memory", "pids"))  # the root cgroup may, though it holds processes
        cgroupfs.fs.mkdir(kit, exist_ok=True)
        controllers = enable(kit)
    except OSError:  # a container's root, say, which holds processes: the next step empties it
        controllers = ()
    if "memory" in controllers:
        return _placed(kit, controllers, "the kit's own cgroup under the root")
    try:
        cgroupfs.fs.rmdir(kit)
    except OSError:
        pass
    return None


def _delegated(mine: Path) -> Placement | str:
    """Step 3: systemd's delegation pattern in the grader's own writable cgroup."""
    leaf = mine / LEAF
    try:
        cgroupfs.fs.mkdir(leaf, exist_ok=True)
        for _ in range(5):  # a process may join meanwhile (EBUSY): move it too, then again
            for pid in pids_in(mine):
                try:
                    cgroupfs.fs.write(leaf / "cgroup.procs", str(pid))
                except ProcessLookupError:
                    pass  # it exited meanwhile
            try:
                controllers = enable(mine)
                break
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise
        else:
            return f"processes kept joining the grader's cgroup {mine}, so it could not be emptied"
    except OSError as e:
        return f"the grader's cgroup v2 {mine} is writable but could not be set up ({e.strerror or e})"
    if "memory" not in controllers:
        return (f"the grader's cgroup v2 subtree {mine} delegates no memory controller "
                f"(it offers: {' '.join(_words(mine / 'cgroup.controllers')) or 'none'})")
    return _placed(mine, controllers, f"a delegated subtree (the grader moved into its leaf {LEAF})")


def _v2() -> Placement | str:
    base, mine = v2_base(), own(None)
    if base is None or mine is None:
        return "no cgroup v2 hierarchy"
    if "memory" not in _words(base / "cgroup.controllers"):
        return "the cgroup v2 hierarchy has no memory controller (it is bound to cgroup v1)"
    if mine.name == LEAF and "memory" in _words(mine.parent / "cgroup.subtree_control") \
            and cgroupfs.fs.writable(mine.parent):
        controllers = tuple(n for n in WANTED if n in _words(mine.parent / "cgroup.subtree_control"))
        return _placed(mine.parent, controllers, f"a delegated subtree (the grader is in its leaf {LEAF})")
    if cgroupfs.fs.writable(base):
        placed = _as_root(base)
        if placed is not None:
            return placed
    if cgroupfs.fs.writable(mine):
        return _delegated(mine)
    return f"the grader's cgroup v2 {mine} is not writable: no delegated subtree"


def _v1() -> Placement | str:
    mem = own("memory")
    if mem is None or not cgroupfs.fs.writable(mem):
        return "no writable cgroup v1 memory hierarchy"
    pids, cpu = own("pids"), own("cpu")
    pids = pids if pids is not None and cgroupfs.fs.writable(pids) else None
    cpu = cpu if cpu is not None and cgroupfs.fs.writable(cpu) else None
    controllers = ("memory",) + (("pids",) if pids else ()) + (("cpu",) if cpu else ())
    said = ", ".join(controllers) + ("" if pids else " (no pids controller: the sandbox may not fork)")
    return Placement(1, f"cgroup v1 at {mem}, controllers {said}", mem, pids, cpu, controllers)


_found: list = []


def find() -> Placement:
    """Where this process's sandboxes go; found (and the grader moved, under v2) once."""
    if not _found:
        v2 = _v2()
        if isinstance(v2, Placement):
            _found.append(v2)
        else:
            v1 = _v1()
            _found.append(v1 if isinstance(v1, Placement) else Placement(0, _nowhere(v2, v1)))
    return _found[0]


def forget() -> None:
    """Find again on the next call (tests, after the machine's cgroups changed)."""
    _found.clear()


def _nowhere(v2: str, v1: str) -> str:
    if not cgroupfs.fs.exists(ROOT):
        why = f"no cgroup filesystem at {ROOT}"
    elif v2 == "no cgroup v2 hierarchy" or "bound to cgroup v1" in v2:
        why = v1 + (" (run as root)" if os.geteuid() != 0 else "")
    else:
        why = v2
    hint = systemd_scope.hint()
    return f"no writable cgroup: {why}" + (f"; {hint}" if hint else "")
