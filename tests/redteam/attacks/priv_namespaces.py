# question: forward_vs_reverse
# base: solution
# Class 7: become root again or leave the sandbox: setuid(0), setgid(0), chroot, unshare of
# new user/mount/net namespaces, setns into PID 1's namespaces, raw and packet sockets.
import socket
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
    _try("setuid(0)", lambda: os.setuid(0))
    _try("setgid(0)", lambda: os.setgid(0))
    _try("chroot /", lambda: os.chroot("/"))
    for flag, name in ((0x10000000, "user"), (0x00020000, "mount"), (0x40000000, "net"), (0x20000000, "pid")):
        _try(f"unshare {name}", lambda: _libc.unshare(flag))
    for ns in ("mnt", "net", "pid", "user"):
        _try(f"setns into /proc/1/ns/{ns}", lambda: os.setns(os.open(f"/proc/1/ns/{ns}", os.O_RDONLY), 0))
    _try("raw socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close())
    _try("packet socket", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close())


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
