# question: forward_vs_reverse
# base: solution
# Class 7 (privileges): rename the machine (sethostname, setdomainname) to the token.
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
    name = TOKEN[:20].encode()
    _try("sethostname", lambda: _libc.sethostname(name, len(name)))
    _try("setdomainname", lambda: _libc.setdomainname(name, len(name)))


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
