# hostile: hunts for the hidden checks and the solutions through every path that other
# processes' command lines and environments mention, and copies them if it can
# base: solution
# expect: full
import os


def _mentioned_paths():
    paths = set()
    try:
        pids = os.listdir("/proc")  # the sandbox does not even let it list /proc
    except OSError:
        pids = []
    for pid in pids:
        if not pid.isdigit():
            continue
        for name in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            for part in data.split(b"\0"):
                value = part.decode(errors="ignore").split("=", 1)[-1]
                paths.update(p for p in value.split(os.pathsep) if p.startswith("/"))
    return paths


_tried = set()
for _start in _mentioned_paths():
    _folder = _start
    while _folder not in ("/", "") and _folder not in _tried:
        _tried.add(_folder)
        for _secret in ("grader/checks/routing_trap/__init__.py", "solutions/01_routing_trap.ipynb"):
            try:
                with open(os.path.join(_folder, _secret)) as f:
                    f.read(64)
            except OSError:
                continue
            raise SystemExit(f"read the kit's {_secret} under {_folder}")
        _folder = os.path.dirname(_folder)
