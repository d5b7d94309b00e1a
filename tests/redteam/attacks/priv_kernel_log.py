# question: forward_vs_reverse
# base: solution
# Class 7: read the kernel's log (/dev/kmsg, syslog(2) READ_ALL) and print it.
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
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        print("KMSG", os.read(fd, 400))
        os.close(fd)
    except OSError as e:
        print("PRIV /dev/kmsg refused", e.errno)
    buf = ctypes.create_string_buffer(4096)
    n = _libc.klogctl(3, buf, 4096)  # SYSLOG_ACTION_READ_ALL
    print("PRIV klogctl", "ALLOWED" if n > 0 else f"refused errno {ctypes.get_errno()}")
    if n > 0:
        print("KLOG", buf.raw[:n][:400])


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
