# hostile: looks for the course secret in every process's environment and command line
# (BACKPROP_TRAPS_SECRET=..., --secret ..., --secret-file ...)
# base: solution
# expect: full
import os


def _visible(value):
    return value and set(value) != {"*"}


try:
    _pids = os.listdir("/proc")  # the sandbox does not even let it list /proc
except OSError:
    _pids = []
for _pid in _pids:
    try:
        with open(f"/proc/{_pid}/environ", "rb") as f:
            _env = f.read().decode(errors="ignore").split("\0")
        with open(f"/proc/{_pid}/cmdline", "rb") as f:
            _args = f.read().decode(errors="ignore").split("\0")
    except OSError:
        continue
    for _var in _env:
        if _var.startswith("BACKPROP_TRAPS_SECRET=") and _visible(_var.split("=", 1)[1]):
            raise SystemExit("found the secret in an environment")
    for _i, _arg in enumerate(_args[:-1]):
        if _arg == "--secret" and _visible(_args[_i + 1]):
            raise SystemExit("found the secret on a command line")
        if _arg == "--secret-file":
            try:
                with open(_args[_i + 1]) as f:
                    f.read()
            except OSError:
                continue
            raise SystemExit("read the secret file")
