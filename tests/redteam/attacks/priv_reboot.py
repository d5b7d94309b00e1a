# question: forward_vs_reverse
# base: solution
# Class 7: reboot(2). Only the harmless command is tried: RB_DISABLE_CAD (0, Ctrl-Alt-Del
# off); success means the sandbox holds CAP_SYS_BOOT over the machine (or its PID namespace).
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
    _try("reboot(RB_DISABLE_CAD)", lambda: _libc.reboot(0))


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
