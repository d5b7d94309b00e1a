"""One step of the GPU session (benchmarks/gpu_session.py): a command in a process group of its
own, its whole output kept in a log file beside the report, and stopped at its budget together
with everything it started (pytest's workers, compute-sanitizer's target, their children).

The group is a new process group in the session's own process session (not a new session):
os.killpg reaches every process of the step, and a device machine that ends the session's
command still ends them too (it spares only processes that started a session of their own).
If the session itself is stopped (SIGTERM, Ctrl-C), the step running then is stopped first.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

GRACE = 5  # seconds between SIGTERM and SIGKILL for a step's group
TAIL = 40_000  # characters of a log kept in memory for the report's summary
_running: list[subprocess.Popen] = []


@dataclass
class Step:
    name: str
    argv: list
    budget: int                                 # seconds, then the whole group is stopped
    env: dict = field(default_factory=dict)     # on top of the session's environment
    what: str = ""                              # the plan's line


@dataclass
class Outcome:
    name: str
    budget: int
    seconds: float
    code: int | None  # None: stopped at its budget
    log: Path
    output: str       # the log's last TAIL characters


def _own_group() -> dict:
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}  # noqa: PLW1509 (before exec, in the child only)


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the step's whole group, then SIGKILL to whatever is left after GRACE seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return  # the group is gone
        if sig == signal.SIGTERM:
            try:
                proc.wait(timeout=GRACE)
            except subprocess.TimeoutExpired:
                pass
            deadline = time.monotonic() + GRACE
            while time.monotonic() < deadline and _group_alive(proc.pid):
                time.sleep(0.1)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def run(step: Step, cwd: Path, env: dict, log: Path) -> Outcome:
    """Run a step to its end or its budget; the group is stopped either way (no stragglers)."""
    start = time.monotonic()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as sink:
        sink.write(f"$ {' '.join(map(str, step.argv))}\n".encode())
        sink.flush()
        proc = subprocess.Popen(step.argv, cwd=cwd, env={**env, **step.env}, stdout=sink,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **_own_group())
        _running.append(proc)
        try:
            code = proc.wait(timeout=step.budget)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            stop_group(proc)
            _running.remove(proc)
    seconds = time.monotonic() - start
    output = log.read_bytes()[-TAIL:].decode(errors="replace")
    return Outcome(step.name, step.budget, seconds, code, log, output)


def stop_on_signals() -> None:
    """SIGTERM or SIGINT to the session: stop the running step's group, then exit 128 + signal."""
    def handler(signum, frame):
        for proc in list(_running):
            stop_group(proc)
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
