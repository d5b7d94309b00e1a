# question: forward_vs_reverse
# base: solution
# Class 3: the machine's private files: /etc/shadow, root's and users' home folders (a canary
# the test put there), /home, the grader's /proc/<parent>/root view.
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


for _p in TARGETS + ["/etc/shadow", "/etc/gshadow", "/root", "/home", "/etc/ssh",
                     f"/proc/{os.getppid()}/root/etc/shadow", "/proc/1/root/etc/shadow"]:
    _grab(_p)
