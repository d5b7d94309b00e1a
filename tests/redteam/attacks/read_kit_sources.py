# question: forward_vs_reverse
# base: solution
# Class 3: the kit's own sources (the hidden checks, the solution notebooks), by path, through
# the editable install's finder and .pth files in site-packages, and by importing them.
import glob
import importlib
import os
import site
import sys

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


_paths = list(TARGETS)
for _sp in site.getsitepackages():
    _paths += glob.glob(os.path.join(_sp, "*backprop*")) + glob.glob(os.path.join(_sp, "__editable__*"))
    _paths += glob.glob(os.path.join(_sp, "grader*")) + glob.glob(os.path.join(_sp, "*.pth"))
for _p in _paths:
    _grab(_p)
for _name in ("grader", "backprop_traps.grader", "backprop_traps.grader.checks.forward_vs_reverse", "backprop_traps.grader.loading.reference", "solutions"):
    try:
        _m = importlib.import_module(_name)
        print("IMPORTED", _name, getattr(_m, "__file__", None))
        import inspect
        print("SOURCE", inspect.getsource(_m)[:400])
    except Exception as e:  # noqa: BLE001
        print("DENIED import", _name, type(e).__name__)
