# question: forward_vs_reverse
# base: solution
# Class 7: attach to the grader with ptrace (PTRACE_SEIZE: no stop) and stay attached while
# it grades; read its memory through process_vm_readv and /proc/<parent>/mem.
import time
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
    ppid = os.getppid()
    _try("ptrace seize parent", lambda: _libc.ptrace(0x4206, ppid, None, None))  # PTRACE_SEIZE
    _try("open /proc/parent/mem", lambda: os.close(os.open(f"/proc/{ppid}/mem", os.O_RDONLY)))
    time.sleep(1.0)  # stay attached while the test looks at its own TracerPid


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
