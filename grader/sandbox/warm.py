"""A sandbox started before its submission is known (issue 47, item 2): warm, and clean.

A child's boot (bubblewrap, Python, numpy: about 0.15 CPU seconds, most of a grading's wait) is
the same for every submission, so it need not wait for one. ``prepare`` starts the next
grading's sandbox now (while the grader reads the file, loads the question, or grades the
submission before it); ``take`` hands it to the grading it was started for. Isolation is exactly
a fresh sandbox's, because it *is* one: one new bubblewrap sandbox, with its own namespaces,
cgroup, seccomp filter and uid, per submission, only started earlier. Nothing is forked from a
shared parent and nothing is reused: a prepared child has received no request at all (not even
its set-up message, sent by ``Sandbox.start``), so no learner code, nor anything of another
submission, has ever reached it. ``Sandbox.adopt`` refuses any other.

A prepared sandbox fits a grading only when everything its launch depended on is the same
(``Sandbox.launch_key``: the limits, the layers, practice or course, and the paths it masks);
else it is closed and the grading starts its own. At most one waits per process, and it is
closed when the process exits (its child also dies with this process: ``--die-with-parent``
and the worker's parent-death signal).
"""
from __future__ import annotations

import atexit
import threading

_lock = threading.Lock()
_waiting: list = []  # the one prepared Sandbox, launched, never handed out yet


def prepare(limits, hide, practice: bool) -> None:
    """Start the sandbox of the next grading (``limits``, masking ``hide``, ``practice``) now,
    unless the one waiting was started for exactly that (``grade FILE`` starts one before the
    CLI is imported: grader/entry.py) and is still fresh."""
    from backprop_traps.grader.sandbox.process import Sandbox
    box = Sandbox("", limits, hide=list(hide), practice=practice)
    with _lock:
        if _waiting and _waiting[0].fresh and _waiting[0].launch_key() == box.launch_key():
            return
    box.launch()
    with _lock:
        old = list(_waiting)
        _waiting[:] = [box]
    for stale in old:
        stale.close()


def take(limits, hide, practice: bool):
    """The prepared sandbox, if it was started for exactly this (``launch_key``); else None.
    Either way no sandbox is left waiting: one not taken is closed."""
    with _lock:
        waiting = list(_waiting)
        _waiting.clear()
    if not waiting:
        return None
    box = waiting[0]
    from backprop_traps.grader.sandbox.process import Sandbox
    if box.launch_key() == Sandbox("", limits, hide=list(hide), practice=practice).launch_key() and box.fresh:
        return box
    box.close()
    return None


def close() -> None:
    """Close the sandbox still waiting, if any (at exit, and for tests)."""
    with _lock:
        waiting = list(_waiting)
        _waiting.clear()
    for box in waiting:
        box.close()


atexit.register(close)
