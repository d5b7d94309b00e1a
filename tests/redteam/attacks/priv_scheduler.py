# question: forward_vs_reverse
# base: solution
# Class 7: real-time scheduling (SCHED_FIFO for itself, undone at once: a spinning FIFO task
# would freeze the machine), and moving its parent, the grader, to SCHED_BATCH.
import ctypes
import os

TOKEN = "__TOKEN__"
_libc = ctypes.CDLL(None, use_errno=True)


def _try(what, fn):
    """Run one privileged act; print what happened (a probe only: the test judges effects)."""
    try:
        rc = fn()
        err = ctypes.get_errno() if isinstance(rc, int) and rc < 0 else 0
        print("PRIV", what, "ALLOWED" if not err else f"refused errno {err}")
    except Exception as e:  # noqa: BLE001
        print("PRIV", what, f"refused {type(e).__name__} {getattr(e, 'errno', '')}")


def _attack():
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        print("PRIV SCHED_FIFO ALLOWED")
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except OSError as e:
        print("PRIV SCHED_FIFO refused", e.errno)
    try:  # under bubblewrap the parent is the sandbox's own init: judged from outside only
        os.sched_setscheduler(os.getppid(), os.SCHED_BATCH, os.sched_param(0))
        print("SCHED parent moved to SCHED_BATCH")
    except OSError as e:
        print("SCHED parent refused", e.errno)


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
