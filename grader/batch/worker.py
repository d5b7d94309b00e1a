"""A grading process of the local batch runner: specs in on stdin, records out, one per line.

Run as ``python -m backprop_traps.grader.batch.worker``. Each ``-j`` slot of the runner drives one of
these, so grading runs in parallel without sharing one interpreter's lock, and a
submission that hangs or kills its grader takes down only this process: the runner
records that submission's failure and starts a fresh one.

Records leave on the process's original stdout only; fd 1 is pointed at stderr first, so
nothing printed while grading can be mistaken for a record. SIGTERM unwinds normally, so
the sandbox's clean-up kills the submission's processes before this one exits.

A grading process whose own limits, priority or CPU affinity changed (something reached
it from outside: no sandbox can, but a machine without bubblewrap is weaker) stops with
``TAMPERED`` instead of grading: the runner replaces it and grades the submission again.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import sys

TAMPERED = 75
"""Exit status: this process was changed from outside; grade the submission elsewhere."""


def fingerprint() -> tuple:
    """What a neighbour could change about this process to make honest submissions fail."""
    limits = tuple(resource.getrlimit(getattr(resource, name)) for name in dir(resource)
                   if name.startswith("RLIMIT_"))
    affinity = tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else ()
    return limits, os.getpriority(os.PRIO_PROCESS, 0), affinity


RUNNER_PID = "BACKPROP_TRAPS_RUNNER_PID"
"""The runner's pid, so a grading process can tell whether its runner is already gone."""


def die_with_runner() -> None:
    """SIGTERM this process the moment its runner dies (a SIGKILLed batch): it unwinds, and
    its sandbox is stopped with it, instead of grading on alone for a call's full timeout."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    expected = os.environ.get(RUNNER_PID)
    if expected and str(os.getppid()) != expected:  # it died before the line above
        sys.exit(143)


def main() -> None:
    records = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    die_with_runner()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides when to stop
    from backprop_traps.grader.batch.grading import grade_job

    untouched = fingerprint()
    for line in sys.stdin:
        if not line.strip():
            continue
        if fingerprint() != untouched:
            sys.exit(TAMPERED)
        record = grade_job(json.loads(line))
        if fingerprint() != untouched:  # changed while grading: this result is not to be trusted
            sys.exit(TAMPERED)
        try:
            records.write(json.dumps(record) + "\n")
            records.flush()
        except BrokenPipeError:  # the runner is gone: nobody wants the rest
            return


if __name__ == "__main__":
    main()
