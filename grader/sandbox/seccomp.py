"""The sandbox's system-call filter, compiled by libseccomp (through ``pyseccomp``) and
loaded by bubblewrap (``--seccomp FD``) before the worker starts.

Always refused: the kernel keyrings (``keyctl``, ``add_key``, ``request_key``), which are
not namespaced by PID, mount or IPC namespaces and would let one submission leave a note
for the next. Where no cgroup counts the sandbox's memory (see ``grader.sandbox.measure``),
new processes are refused too (threads stay allowed), so the worker's own high-water mark
is the whole sandbox's, and SysV shared memory and memfd, which a process's resident size
does not show until mapped, are refused as well.
"""
from __future__ import annotations

import errno
import functools
import os
import tempfile

CLONE_THREAD = 0x00010000

ALWAYS_DENIED = ("keyctl", "add_key", "request_key")
DENIED_WITHOUT_CGROUP = ("fork", "vfork", "shmget", "memfd_create")


def available() -> tuple[bool, str]:
    try:
        import pyseccomp
        pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    except Exception as e:  # noqa: BLE001 (no libseccomp.so.2, or an unusable one)
        return False, f"no seccomp filter (libseccomp unavailable: {type(e).__name__})"
    return True, "seccomp via libseccomp"


def build(no_fork: bool):
    """The filter as a ``pyseccomp.SyscallFilter`` (raises if libseccomp is unavailable)."""
    import pyseccomp as sc
    f = sc.SyscallFilter(sc.ALLOW)
    for name in ALWAYS_DENIED:
        f.add_rule(sc.ERRNO(errno.EPERM), name)
    if no_fork:
        for name in DENIED_WITHOUT_CGROUP:
            f.add_rule(sc.ERRNO(errno.EPERM), name)
        # clone without CLONE_THREAD makes a process; with it, a thread (numpy, torch need those)
        f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
        # clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc use clone
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    return f


@functools.lru_cache(maxsize=2)
def compiled(no_fork: bool) -> bytes | None:
    """The BPF program as bytes (compiled once per process), or None if unavailable."""
    f = compile_filter(no_fork)
    if f is None:
        return None
    with f:
        return f.read()


def as_fd(program: bytes) -> int:
    """A descriptor bwrap reads the program from (``--seccomp FD``): a pipe, already closed
    for writing (a filter is a few hundred bytes: far below a pipe's buffer)."""
    r, w = os.pipe()
    os.write(w, program)
    os.close(w)
    return r


def compile_filter(no_fork: bool):
    """The BPF program as an open temporary file (at position 0) for bwrap, or None."""
    try:
        f = build(no_fork)
    except Exception:  # noqa: BLE001 (no pyseccomp or libseccomp: the caller reports it)
        return None
    out = tempfile.TemporaryFile()
    f.export_bpf(out)
    out.seek(0)
    return out
