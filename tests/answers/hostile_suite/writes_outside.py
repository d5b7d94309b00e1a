# hostile: tries to write outside its temp folder: /tmp, /dev/shm, its home's parent, and
# a forged result into the batch's OUTDIR (found on the grader's command line)
# base: solution
# expect: full
import json
import os

_targets = ["/tmp/backprop-traps-pwned-write", "/dev/shm/backprop-traps-pwned",
            os.path.join(os.path.expanduser("~"), "..", "backprop-traps-pwned-home")]
try:
    _pids = os.listdir("/proc")  # the sandbox does not even let it list /proc
except OSError:
    _pids = []
for _pid in _pids:
    try:
        with open(f"/proc/{_pid}/cmdline", "rb") as f:
            _args = [a.decode(errors="ignore") for a in f.read().split(b"\0")]
    except OSError:
        continue
    if "-o" in _args[:-1]:
        _out = _args[_args.index("-o") + 1]
        _targets += [os.path.join(_out, "results", "forged.json"), os.path.join(_out, "forged.json")]

_forged = json.dumps({"submission": "forged", "question": "routing_trap", "score": 12.0,
                      "max_score": 12.0, "error": None, "tests": []})
for _target in _targets:
    try:
        with open(_target, "w") as f:
            f.write(_forged)
    except OSError:
        continue
    raise SystemExit(f"wrote {_target}")
