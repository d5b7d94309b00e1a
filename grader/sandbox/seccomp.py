"""The sandbox's system-call filter, compiled by libseccomp (through ``pyseccomp``) and
loaded by bubblewrap (``--seccomp FD``) before the worker starts.

Without bubblewrap (``no_namespaces``) the worker loads it itself. Always refused: the
kernel keyrings (not namespaced: a note could pass between submissions), the calls that
change the machine (reboot, hostname, mounts, modules, the kernel log, real-time
scheduling, ...), evicting page cache or making anonymous memory reclaimable
(``posix_fadvise``, ``madvise`` FREE/COLD/PAGEOUT), what
the kernel counts per user across the host (inotify, epoll, POSIX message queues, io_uring,
locked memory, file locks), and limits, priority or CPU affinity set on any process but itself.
Without bubblewrap's namespaces: sockets and SysV IPC too. Where no cgroup caps the
sandbox's memory and processes: new processes (threads stay allowed), shared memory, memfd,
socket pairs and pipes, which would hold memory outside the worker's address-space limit.
"""
from __future__ import annotations

import errno
import functools
import os
import tempfile

CLONE_THREAD = 0x00010000
AF_UNIX, PRIO_PROCESS = 1, 0

ALWAYS_DENIED = (
    # kernel keyrings: not namespaced, a note could pass from one submission to the next
    "keyctl", "add_key", "request_key",
    # what no answer needs and a privileged process could do to the machine (Docker's
    # default profile refuses the same); inside bubblewrap they fail anyway (no capabilities)
    "reboot", "sethostname", "setdomainname", "syslog", "mount", "umount2", "pivot_root",
    "chroot", "unshare", "setns", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "swapon", "swapoff", "acct", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "ioperm", "iopl", "bpf", "perf_event_open",
    "userfaultfd", "ptrace", "process_vm_readv", "process_vm_writev", "open_by_handle_at",
    "name_to_handle_at", "quotactl", "lookup_dcookie", "vhangup", "fanotify_init",
    "sched_setscheduler", "sched_setattr", "sched_setparam",
    # identities: nothing to gain inside bubblewrap; a root worker without it keeps root's
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid",
    "setfsgid", "setgroups", "capset",
    # evicting page cache: memory the meter counted at the baseline would vanish and make room
    # for activations unseen (a further layer: the call's own cgroup already counts from zero)
    "fadvise64", "process_madvise",
)
HELD_PER_USER = (
    # what the kernel counts per user across the host (not per sandbox): a sandbox holding
    # them all would starve the grader, the next submission and the user's other processes
    "inotify_init", "inotify_init1", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
    "mq_notify", "mq_getsetattr", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "mlock", "mlock2", "mlockall",
    # epoll watches are counted per user (the grader's, through the user namespace): 256
    # processes of 512 descriptors could watch each other millions of times
    "epoll_create", "epoll_create1",
    # a lock on a file every process can read (the Python installation) blocks others
    "flock",
)
LOCKING_FCNTL = (6, 7, 37, 38, 1024)
"""fcntl's F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE (ENOLCK: no locks here)."""
EVICTING_ADVICE = (8, 20, 21)
"""madvise's MADV_FREE, MADV_COLD and MADV_PAGEOUT: pages made reclaimable or reclaimed now.
A pool freed with MADV_FREE stays charged but sits on the file LRU list, and is written again
unseen (issue 35). Refused with EINVAL, as a kernel without the advice answers: allocators that
use MADV_FREE (jemalloc, mimalloc) then fall back to MADV_DONTNEED, which frees the pages at
once (re-touched, they are charged again). MADV_DONTNEED on a file mapping only unmaps the
process's view; its page cache stays charged."""
ONLY_ON_ITSELF = ("prlimit64", "sched_setaffinity")
"""Allowed on the calling process (pid 0) only: never on the grader or a classmate."""
DENIED_WITHOUT_NAMESPACES = ("shmget", "msgget", "semget", "socket")
"""Without bubblewrap's IPC and network namespaces, SysV IPC and sockets reach the host
(a socketpair, which reaches nothing, stays allowed)."""
DENIED_WITHOUT_CGROUP = ("fork", "vfork", "shmget", "memfd_create", "socketpair", "pipe", "pipe2")
"""Where no cgroup caps the sandbox: nothing that holds memory beyond the worker's RLIMIT_AS
(another process, shared memory, memfd, socket and pipe buffers)."""


def available() -> tuple[bool, str]:
    try:
        import pyseccomp
        pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    except Exception as e:  # noqa: BLE001 (no libseccomp.so.2, or an unusable one)
        return False, f"no seccomp filter (libseccomp unavailable: {type(e).__name__})"
    return True, "seccomp via libseccomp"


def build(no_fork: bool, no_namespaces: bool = False):
    """The filter as a ``pyseccomp.SyscallFilter`` (raises if libseccomp is unavailable)."""
    import pyseccomp as sc
    f = sc.SyscallFilter(sc.ALLOW)
    denied = set(ALWAYS_DENIED) | set(HELD_PER_USER)
    if no_namespaces:
        denied.update(DENIED_WITHOUT_NAMESPACES)
    if no_fork:
        denied.update(DENIED_WITHOUT_CGROUP)
    for name in sorted(denied):
        try:
            f.add_rule(sc.ERRNO(errno.EPERM), name)
        except Exception:  # noqa: BLE001 (a call this architecture does not have)
            pass
    for name in ONLY_ON_ITSELF:
        f.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.NE, 0))
    for command in LOCKING_FCNTL:
        f.add_rule(sc.ERRNO(errno.ENOLCK), "fcntl", sc.Arg(1, sc.EQ, command))
    for advice in EVICTING_ADVICE:
        f.add_rule(sc.ERRNO(errno.EINVAL), "madvise", sc.Arg(2, sc.EQ, advice))
    # setpriority(which, who, prio): only PRIO_PROCESS on itself (who 0); never a user or group
    f.add_rule(sc.ERRNO(errno.EPERM), "setpriority", sc.Arg(0, sc.NE, PRIO_PROCESS))
    f.add_rule(sc.ERRNO(errno.EPERM), "setpriority", sc.Arg(1, sc.NE, 0))
    if no_fork:
        # clone without CLONE_THREAD makes a process; with it, a thread (numpy, torch need those)
        f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
        # clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc use clone
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    return f


@functools.lru_cache(maxsize=4)
def compiled(no_fork: bool) -> bytes | None:
    """The BPF program for bubblewrap, as bytes (compiled once per process), or None where
    libseccomp is unavailable (the caller reports it)."""
    try:
        f = build(no_fork)
    except Exception:  # noqa: BLE001 (no pyseccomp, or no libseccomp.so.2)
        return None
    with tempfile.TemporaryFile() as out:  # libseccomp exports to a file descriptor only
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def as_fd(program: bytes) -> int:
    """A descriptor bwrap reads the program from (``--seccomp FD``): a pipe, already closed
    for writing (a filter is a few hundred bytes: far below a pipe's buffer)."""
    r, w = os.pipe()
    os.write(w, program)
    os.close(w)
    return r
