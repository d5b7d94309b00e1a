# question: forward_vs_reverse
# base: solution
# Class 7: mount a tmpfs named after the token (on /tmp, /mnt and the working folder),
# and remount / read-write; the host's mount table must not change.
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
    src = ("rt-" + TOKEN[-12:]).encode()
    for target in (b"/tmp", b"/mnt", os.getcwd().encode(), b"/"):
        _try(f"mount tmpfs on {target}", lambda: _libc.mount(src, target, b"tmpfs", 0, None))
    _try("remount / rw", lambda: _libc.mount(None, b"/", None, 32 | 1 << 5, None))  # MS_REMOUNT


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
