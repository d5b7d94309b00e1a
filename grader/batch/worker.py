"""A grading process of the local batch runner: specs in on stdin, records out, one per line.

Run as ``python -m grader.batch.worker``. Each ``-j`` slot of the runner drives one of
these, so grading runs in parallel without sharing one interpreter's lock, and a
submission that hangs or kills its grader takes down only this process: the runner
records that submission's failure and starts a fresh one.

Records leave on the process's original stdout only; fd 1 is pointed at stderr first, so
nothing printed while grading can be mistaken for a record. SIGTERM unwinds normally, so
the sandbox's clean-up kills the submission's processes before this one exits.
"""
from __future__ import annotations

import json
import os
import signal
import sys


def main() -> None:
    records = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides when to stop
    from grader.batch.grading import grade_job

    for line in sys.stdin:
        if not line.strip():
            continue
        record = grade_job(json.loads(line))
        try:
            records.write(json.dumps(record) + "\n")
            records.flush()
        except BrokenPipeError:  # the runner is gone: nobody wants the rest
            return


if __name__ == "__main__":
    main()
