# question: forward_vs_reverse
# base: solution
# Class 4, round 2: hold every resource the kernel counts per user across the host, from load
# time until the sandbox ends, so that the grader, the next submission or any other process
# of the same user cannot get one: open files, inotify instances, POSIX message queues,
# queued real-time signals, io_uring rings, and an exclusive lock on a file every process
# can read (__LOCKED__), epoll instances (whose watches count per user too). The grader's
# test takes each of them from outside meanwhile.
import ctypes
import os
import signal
import time

_libc = ctypes.CDLL(None, use_errno=True)
held, got = [], {}


def _grab(name, make, most):
    count = 0
    for _ in range(most):
        try:
            thing = make()
        except (OSError, ValueError, MemoryError):
            break
        if isinstance(thing, int) and thing < 0:
            break
        held.append(thing)
        count += 1
    got[name] = count


def _lock():
    import fcntl
    fd = os.open("__LOCKED__", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


class _MqAttr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]


def _mq(i=[0]):
    i[0] += 1
    attr = _MqAttr(0, 10, 8192, 0)
    fd = _libc.mq_open(f"/rt-mq-{os.getpid()}-{i[0]}".encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr))
    return fd if fd >= 0 else -1


def _signal():
    os.kill(os.getpid(), signal.SIGRTMIN)  # blocked: it stays queued, counted against the user
    return 1


signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
_grab("lock", _lock, 1)
_grab("inotify", lambda: _libc.inotify_init1(0), 4096)
_grab("epoll", lambda: __import__("select").epoll(), 256)
_grab("io_uring", lambda: _libc.syscall(425, 1, ctypes.create_string_buffer(120)), 256)
_grab("mqueue", _mq, 4096)
_grab("signals", _signal, 200_000)
_grab("files", lambda: os.open("/dev/null", os.O_RDONLY), 1_000_000)
for fd in held[-16:]:  # room for the call itself
    if isinstance(fd, int) and fd > 2:
        os.close(fd)
print("HELD", got, flush=True)

_plain_forward = chain_forward


def chain_forward(As, x):
    time.sleep(2.0)  # hold them while the grader's test tries to get its own
    return _plain_forward(As, x)
