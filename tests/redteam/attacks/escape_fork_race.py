# question: forward_vs_reverse
# base: solution
# Class 4: a moving target: a grandchild that forks a new copy of itself and exits,
# over and over (a new pid every few ms, marker wiped, renamed to the token), to slip
# between a killer's scan of /proc and its kill().

import ctypes
import os
import signal
import sys
import time

TOKEN = "__TOKEN__"
_libc = ctypes.CDLL(None, use_errno=True)


def _name_me():
    """comm = the token (seen from outside in /proc/<pid>/comm)."""
    try:
        _libc.prctl(15, ctypes.c_char_p(TOKEN[:15].encode()), 0, 0, 0)  # PR_SET_NAME
    except Exception:  # noqa: BLE001
        pass


def _wipe_environ():
    """Overwrite the original environment block (what /proc/<pid>/environ shows), the
    sandbox's marker included."""
    try:
        env = ctypes.POINTER(ctypes.c_char_p).in_dll(_libc, "environ")
        i = 0
        while env[i]:
            n = len(env[i])
            ctypes.memset(ctypes.cast(env, ctypes.POINTER(ctypes.c_void_p))[i], 0, n)
            i += 1
    except Exception as e:  # noqa: BLE001
        print("wipe failed", e)


def _ignore_signals():
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGPIPE):
        try:
            signal.signal(s, signal.SIG_IGN)
        except (OSError, ValueError):
            pass


def _forever():
    while True:
        time.sleep(0.2)


def _detached(body):
    """Run body() in a grandchild in its own session (double fork); never raises here."""
    try:
        pid = os.fork()
    except OSError as e:
        print("fork refused", e)
        return
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                body()
        except BaseException:  # noqa: BLE001
            pass
        finally:
            os._exit(0)
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


def _hop():
    _ignore_signals()
    _wipe_environ()
    _name_me()
    while True:
        try:
            if os.fork() != 0:
                os._exit(0)
        except OSError:
            time.sleep(0.005)
        os.setsid() if os.getsid(0) != os.getpid() else None
        time.sleep(0.002)


def _escape():
    _detached(_hop)


_solution_forward = chain_forward
_done = []


def chain_forward(As, x):
    if not _done:
        _done.append(1)
        _escape()
    return _solution_forward(As, x)
