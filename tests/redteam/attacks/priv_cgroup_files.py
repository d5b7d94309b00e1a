# question: forward_vs_reverse
# base: solution
# Class 7: read and rewrite the cgroup files (its own memory limit raised, its peak reset):
# /sys/fs/cgroup seen from inside, /proc/self/cgroup, the memory controller's files.
import glob
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
        with open("/proc/self/cgroup") as f:
            print("CGROUP", f.read()[:300])
    except OSError as e:
        print("PRIV /proc/self/cgroup refused", e.errno)
    files = glob.glob("/sys/fs/cgroup/**/memory.*", recursive=True)[:400]
    print("PRIV cgroup files seen", len(files))
    for path in files:
        if path.endswith(("memory.limit_in_bytes", "memory.max", "memory.max_usage_in_bytes", "memory.peak")):
            try:
                with open(path, "w") as f:
                    f.write("max" if path.endswith(".max") else "0" if "usage" in path else "reset")
                print("PRIV wrote", path)
            except OSError:
                pass


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
