"""Ending a sandbox without bubblewrap: kill its process group, its session, and every
process carrying its marker. (With bubblewrap, ending its PID namespace and its cgroup
does this; this stays as a further layer, and as the only one in the fallback.)"""
from __future__ import annotations

import os
import signal
import time

MARKER = "BACKPROP_TRAPS_SANDBOX"


def pauses(wait_seconds: float, first: float = 0.0005, longest: float = 0.002):
    """Yield, then sleep a little longer each time, up to ``longest``, until ``wait_seconds``
    have passed: a killed process is usually gone within a millisecond, so the next look comes
    early (a fixed 10 ms sleep made every grading wait 10 to 20 ms in its clean-up), and one
    with a large address space (numba's takes longest to tear down) is seen gone within 2 ms."""
    deadline = time.monotonic() + wait_seconds
    pause = first
    while True:
        yield
        if time.monotonic() >= deadline:
            return
        time.sleep(pause)
        pause = min(pause * 2, longest)


def kill_tree(pid: int, marker: str, wait_seconds: float = 2.0) -> None:
    """SIGKILL the child's process group and session, and any process carrying its marker
    (a grandchild that escaped with setsid still inherits the environment). SIGKILL lands
    asynchronously, so scan again until none of them is alive (zombies are dead) or the
    bounded wait ends: when this returns, nothing of the submission still runs."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    needle = f"{MARKER}={marker}".encode()
    born = _started(pid)
    killed = [pid]
    for _ in pauses(wait_seconds):
        # watch only the processes just killed (a whole /proc scan reads every process on
        # the host), the child first; once they are gone, a whole scan finds any other
        killed = [p for p in killed if _alive(p)] or _kill_matching(pid, needle, born)
        if not killed:
            return


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _started(pid: int) -> int:
    """When ``pid`` started (clock ticks since boot; 0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _kill_matching(sid_wanted: int, needle: bytes, born: int = 0) -> list[int]:
    """SIGKILL every live process in session ``sid_wanted`` or carrying ``needle`` in its
    environment; return the ones found. ``born``: when the sandbox's first process started;
    every process of the sandbox started since, so an older one's environment is not read
    (one read per process on the host was most of a grading's clean-up)."""
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().rsplit(b")", 1)[1].split()
            if stat[0] in (b"Z", b"X"):  # already dead, waiting to be reaped
                continue
            if int(stat[3]) != sid_wanted:
                if int(stat[19]) < born:  # older than the sandbox: none of its processes
                    continue
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle not in f.read().split(b"\0"):
                        continue
            os.kill(int(entry), signal.SIGKILL)
            found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


def reap_stale_folders(parent: str, prefix: str) -> None:
    """Remove the working folders (``<prefix><pid>-...``) of graders that are gone (killed
    mid-grade): on a tmpfs they would hold the host's memory until it reboots."""
    import shutil
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for name in entries:
        if not name.startswith(prefix):
            continue
        try:
            os.kill(int(name[len(prefix):].split("-")[0]), 0)
            continue  # its grader is alive: its own close() removes it
        except ProcessLookupError:
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        except (ValueError, PermissionError):
            continue
