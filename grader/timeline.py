"""Where one grading's time goes, boundary by boundary (issue 47): a profile kept as a tool.
It sits beside the rooms it stamps (cli, engine, sandbox, batch), under all of them, so the
sandbox needs nothing from the engine above it.

``BACKPROP_TRAPS_PROFILE=1`` makes ``grade`` print, on stderr after its report, one line per
boundary it crossed (the interpreter's start, the imports, the sandbox's launch, the child's
boot, the learner's load, each check, the report): the wall time since the process started,
the step's own wall time, and the CPU seconds (user + system) spent in the step by the grader
and by the sandbox's processes. ``BACKPROP_TRAPS_PROFILE=PATH`` appends the same as one JSON
line per grading process to PATH instead (``benchmarks/grade_profile.py`` reads it).

CPU seconds say what a step costs on a busy machine, where wall time says mostly how busy it
is. Off (the default), ``mark`` is one global test: nothing is read, nothing is kept.
"""
from __future__ import annotations

import atexit
import json
import os
import sys
import time

ENV = "BACKPROP_TRAPS_PROFILE"
_target = os.environ.get(ENV) or None
_marks: list[tuple[str, float, float, float]] = []
_sandbox_pids: list = []  # callables, each giving the host pids of one live sandbox's processes
_notes: list[tuple[str, float]] = []


def enabled() -> bool:
    return _target is not None


def mark(name: str, at: float | None = None, sandbox_cpu: float | None = None) -> None:
    """The step that ends now (or at ``at``, a ``time.monotonic()`` of this machine) is ``name``."""
    if _target is None:
        return
    if not _marks:
        _first()
    times = os.times()
    cpu = sandbox_cpu if sandbox_cpu is not None else _sandbox_cpu()
    _marks.append((name, time.monotonic() if at is None else at, times.user + times.system, cpu))


def note(name: str, seconds: float) -> None:
    """A span that overlaps the steps (the child's boot runs while the grader loads the
    question): listed apart, after the steps."""
    if _target is not None:
        if not _marks:
            _first()
        _notes.append((name, seconds))


def watch_sandbox(root) -> None:
    """Count the CPU of the process ``root()`` names (a sandbox's outermost, or None) and of
    every process below it, while they live."""
    if _target is not None:
        _sandbox_pids.append(lambda: _tree(root()))


def _tree(pid: int | None) -> list[int]:
    found, todo = [], [pid] if pid else []
    while todo and len(found) < 1000:
        pid = todo.pop()
        found.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return found


def _cpu_of(pid: int) -> tuple[tuple[int, int], float]:
    """((pid, its start time), its CPU seconds): a pid used again later is another process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (pid, int(fields[19])), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return (pid, -1), 0.0


_seen_cpu: dict[tuple[int, int], float] = {}  # process -> its CPU when last read: one gone keeps its share


def _sandbox_cpu() -> float:
    for pids in _sandbox_pids:
        try:
            for pid in pids():
                key, cpu = _cpu_of(pid)
                _seen_cpu[key] = max(_seen_cpu.get(key, 0.0), cpu)
        except Exception:  # noqa: BLE001 (a profile never breaks a grading)
            pass
    return sum(_seen_cpu.values())


def _first() -> None:
    """The process's start, from the kernel (to 10 ms): the interpreter and its imports before
    the first boundary are a step too."""
    try:
        with open("/proc/self/stat") as f:
            started = int(f.read().rpartition(")")[2].split()[19]) / os.sysconf("SC_CLK_TCK")
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        age = 0.0
    _marks.append(("process start", time.monotonic() - age, 0.0, 0.0))
    atexit.register(_report)


def rows() -> list[dict]:
    """One dict per step: its name, when it ended (s since the process started), its wall
    seconds and the CPU seconds the grader and the sandbox spent in it."""
    out = []
    for (_, t0, c0, s0), (name, t1, c1, s1) in zip(_marks, _marks[1:]):
        out.append({"step": name, "at": round(t1 - _marks[0][1], 4), "wall": round(t1 - t0, 4),
                    "grader_cpu": round(c1 - c0, 4), "sandbox_cpu": round(s1 - s0, 4)})
    return out


def _report() -> None:
    table = rows()
    times = os.times()
    total = {"wall": round(time.monotonic() - _marks[0][1], 4),
             "grader_cpu": round(times.user + times.system, 4),
             "reaped_children_cpu": round(times.children_user + times.children_system, 4),
             "sandbox_cpu_seen": round(_sandbox_cpu(), 4), "load_average": list(os.getloadavg())}
    if _target == "1":
        print(f"{'step':<44} {'at':>7} {'wall':>7} {'cpu':>6} {'sbx cpu':>7}", file=sys.stderr)
        for r in table:
            print(f"{r['step'][:44]:<44} {r['at']:7.3f} {r['wall']:7.3f} {r['grader_cpu']:6.3f} "
                  f"{r['sandbox_cpu']:7.3f}", file=sys.stderr)
        for name, seconds in _notes:
            print(f"  (in parallel) {name:<38} {seconds:7.3f}", file=sys.stderr)
        print(f"total {total}", file=sys.stderr)
        return
    try:
        with open(_target, "a") as f:
            f.write(json.dumps({"argv": sys.argv[1:], "steps": table, "total": total,
                                "parallel": [{"span": n, "wall": round(s, 4)} for n, s in _notes]}) + "\n")
    except OSError as e:
        print(f"{ENV}: could not write {_target} ({e})", file=sys.stderr)
