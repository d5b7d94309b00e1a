# question: forward_vs_reverse
# base: solution
# Class 3: every process's command line (/proc/*/cmdline; a canary argument the test gives the
# grading process), and the grader's open files through /proc/<parent>/fd.
import os

try:
    _pids = ["1", str(os.getppid())] + [p for p in os.listdir("/proc") if p.isdigit()]
except OSError as e:
    _pids = ["1", str(os.getppid())]
    print("DENIED /proc", e)
for _pid in _pids:
    for _what in ("cmdline", "comm"):
        try:
            with open(f"/proc/{_pid}/{_what}", "rb") as f:
                print("READ", _what, _pid, f.read(2000))
        except OSError as e:
            print("DENIED", _what, _pid, type(e).__name__)
    try:
        for _fd in os.listdir(f"/proc/{_pid}/fd"):
            print("FD", _pid, _fd, os.readlink(f"/proc/{_pid}/fd/{_fd}"))
    except OSError:
        pass
