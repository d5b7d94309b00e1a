# question: forward_vs_reverse
# base: solution
# Class 3: the grading process's environment (a canary variable the test sets there): the
# sandbox's own os.environ, /proc/<parent>/environ, /proc/1/environ and every /proc/*/environ.
import os

for _k, _v in os.environ.items():
    print("ENV", _k, _v)
_pids = ["self", str(os.getppid()), "1"]
try:
    _pids += [p for p in os.listdir("/proc") if p.isdigit()]
except OSError as e:
    print("DENIED /proc", e)
for _pid in _pids:
    try:
        with open(f"/proc/{_pid}/environ", "rb") as f:
            print("READ environ", _pid, f.read(4000))
    except OSError as e:
        print("DENIED environ", _pid, type(e).__name__)
