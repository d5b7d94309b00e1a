# hostile: sends SIGSTOP, SIGTERM and SIGKILL to the process that started it and to its group
# base: solution
# expect: full
# needs: landlock-signals
import ctypes
import os
import signal


def _protected():
    """Aim only at a grader that Landlock protects (ABI 6 scopes signals): on an
    unprotected one this would stop or kill the test run itself."""
    try:
        abi = ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1)  # landlock_create_ruleset
        os.listdir("/etc")
    except PermissionError:
        return abi >= 6
    return False


if _protected():
    parent = os.getppid()
    for target in (parent, -os.getpgid(parent)):
        for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(target, sig)
            except (PermissionError, ProcessLookupError):
                pass
