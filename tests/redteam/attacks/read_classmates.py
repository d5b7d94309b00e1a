# question: forward_vs_reverse
# base: solution
# Class 3: other students' submissions in the same folder (their names are guessed from the
# test's list and from listing the folder), read and printed.
import glob
import os

TARGETS = "__TARGETS__".split("|")


def _grab(path, depth=0):
    try:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path))[:80]:
                print("LIST", path, name)
                if depth < 1:
                    _grab(os.path.join(path, name), depth + 1)
        else:
            with open(path, "rb") as f:
                print("READ", path, f.read(400))
    except Exception as e:  # noqa: BLE001
        print("DENIED", path, type(e).__name__)


for _p in TARGETS + [os.path.dirname(t) for t in TARGETS] + glob.glob(os.path.join(os.path.dirname(TARGETS[0]), "*")):
    _grab(_p)
