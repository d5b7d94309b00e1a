"""Was it the sandbox? Telling a library that failed because of the sandbox itself (a system
file it may not read, a system call seccomp refuses, no writable folder) from the learner's
own exception, so that the first is reported as the grader's error and never as the learner's.

The child describes each exception (worker.describe_exception): its type and message, the
errno and file of the first ``OSError`` in its chain, and ``library``: whether the innermost
Python frame that raised is outside the learner's code. The sandbox's doing, here, is:

1. a known signature of a library's start-up failing for want of what the sandbox withholds
   (``SIGNATURES``), wherever it surfaces, since such errors are often raised from C code
   called straight from the learner's line;
2. raised inside a library (never in the learner's own frame), ``EACCES``, ``EPERM`` or
   ``EROFS`` on a system or Python path, or with no path at all (a refused system call);
3. raised inside a library, ``ENOENT`` on a system path that exists on this machine but is
   not in the sandbox (bubblewrap mounts only some of them).

The learner's own ``raise``, and the learner's own ``open`` of a file it may not read, are
the learner's: the innermost frame is theirs. What the child says is the child's to choose,
so a learner can make their own failure look like the sandbox's: that gains nothing (a check
the grader could not judge scores 0 either way) and marks the result as the grader's error,
which `grade batch` lists under "needs a look" and grades again on its next run.
"""
from __future__ import annotations

import errno
import os
import re

SIGNATURES = (
    ("RuntimeError", "Failed to initialize cpuinfo",
     "torch's cpuinfo could not read the machine's description (/proc/cpuinfo, /sys/devices/system/cpu)"),
    ("FileNotFoundError", "No usable temporary directory found",
     "a library found no writable temporary folder (this sandbox level gives none)"),
)
"""``(exception type, part of its message, what the sandbox withheld)``."""
SYSTEM_TREES = ("/proc/", "/sys/", "/dev/", "/etc/", "/usr/", "/lib/", "/lib64/", "/lib32/",
                "/bin/", "/sbin/", "/run/", "/var/", "/opt/")
_PER_PROCESS = re.compile(r"^/proc/(\d+|self|thread-self)(/|$)")
DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


def refused_by_sandbox(error: dict | None, host_has=os.path.exists) -> str | None:
    """What the sandbox withheld, in words, when ``error`` (a child's described exception,
    made inert) is the sandbox's doing; None when it is the learner's own."""
    if not isinstance(error, dict):
        return None
    kind, message = str(error.get("type", "")), str(error.get("message", ""))
    for name, needle, why in SIGNATURES:
        if kind == name and needle in message:
            return why
    if error.get("library") is not True:
        return None  # raised in the learner's own frame: theirs
    code, path = error.get("errno"), error.get("filename")
    path = path if isinstance(path, str) and path.startswith("/") else None
    if code in DENIED and path is None:
        return f"a system call a library made was refused ({errno.errorcode.get(code, code)})"
    if code in DENIED and _system(path):
        return f"a library was denied {path}"
    if code == errno.ENOENT and _system(path) and not _PER_PROCESS.match(path) and host_has(path):
        return f"a library could not find {path}, which this machine has but the sandbox does not"
    return None


def _system(path: str | None) -> bool:
    """A path of the system or of the Python installation, never a learner's own data."""
    if path is None:
        return False
    from backprop_traps.grader.sandbox import bwrap
    roots = [r.rstrip("/") + "/" for r in bwrap.python_roots()]
    return path.startswith(SYSTEM_TREES) or path.startswith(tuple(roots))
