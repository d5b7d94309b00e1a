# hostile: finds the batch's SOURCE and OUTDIR on the grader's command line and tries to
# read other students' submissions and results
# base: solution
# expect: full
import os


def _batch_paths():
    found = []
    try:
        _pids = os.listdir("/proc")  # the sandbox does not even let it list /proc
    except OSError:
        _pids = []
    for pid in _pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = [a.decode(errors="ignore") for a in f.read().split(b"\0")]
        except OSError:
            continue
        if "-o" in args:  # the batch's command line: SOURCE and -o OUTDIR
            found += [a for a in args[1:] if a.startswith("/")]
    return found


for _path in _batch_paths():
    try:
        _names = os.listdir(_path)
    except OSError:
        continue
    raise SystemExit(f"listed {_path}: {_names[:3]}")
