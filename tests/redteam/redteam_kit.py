"""Helpers of the red-team suite (tests/redteam/test_redteam*.py): building attack submissions,
grading them in the modes the sandbox has, and observing their effects from outside.

Each attack is a learner file in ``attacks/<class>_<name>.py`` (``# question: <id>``; a
``# base: solution`` line means the question's solution code is put in front of it, as
tests/conftest.py's ``answer_file`` does; ``__TOKEN__``-style placeholders are filled in by
the test). What the child prints is used only as a probe of what it could do; every test
judges by something the submission cannot forge.

Modes: the default (bubblewrap + cgroup where the machine allows), and the fallbacks
BACKPROP_TRAPS_NO_BWRAP=1 (Landlock + seccomp + rlimits) and BACKPROP_TRAPS_NO_CGROUP=1
(fork refused; no memory number in a course, the practice meter for a learner's practice).
"""
from __future__ import annotations

import json
import os
import re
import resource
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import solution_source
from backprop_traps.grader.sandbox import bwrap, cgroup
from backprop_traps.grader.sandbox.limits import Limits

HERE = Path(__file__).parent
ATTACKS = HERE / "attacks"
QUICK = Limits(call_seconds=4.0, total_seconds=20.0)
MODES = {
    "default": {},
    "no_bwrap": {bwrap.FORCE_OFF: "1"},
    "no_cgroup": {cgroup.DISABLE: "1"},
    "no_bwrap_no_cgroup": {bwrap.FORCE_OFF: "1", cgroup.DISABLE: "1"},
}


# -- building and grading attacks ------------------------------------------------------------
def build(name: str, folder: Path, filename: str | None = None, **fill) -> Path:
    """The attack ``name`` as a submission file in ``folder``: the solution put in front where
    it says ``# base: solution``, and each ``__KEY__`` replaced by ``fill[key]``."""
    text = (ATTACKS / f"{name}.py").read_text()
    question = re.search(r"^# question: (\S+)", text, re.M).group(1)
    for key, value in fill.items():
        text = text.replace(f"__{key.upper()}__", str(value))
    if re.search(r"^# base: solution", text, re.M):
        text = f"# question: {question}\n{solution_source(question)}\n\n# --- the attack ---\n{text}"
    path = folder / (filename or f"{name}.py")
    path.write_text(text)
    return path


GRADER_SLACK = 256 * 2**20
"""Issue 23, class 3: grading any submission may raise the grading process's peak memory by
at most this much over an honest grading's. Every grading of the suite (``grade``,
``memory_check``, ``grade_in_subprocess``) asserts it."""
_honest: dict = {}


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise ValueError(field)


def peak_growth(work):
    """(``work()``, how far this process's peak resident memory rose above its resident
    memory before it): the high-water mark is reset first (``clear_refs``); None where not."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return work(), None
    before = _status("VmRSS")
    done = work()
    return done, _status("VmHWM") - before


def honest_growth(key: str = "in process") -> int:
    """An honest grading's peak growth, measured once per session (``key``: where)."""
    if key not in _honest:
        from backprop_traps.grader.engine.run import grade_path
        path = build("honest", Path(tempfile.mkdtemp(prefix="rt-honest-")))
        if key == "in process":
            grade_path(path, limits=QUICK)  # the first grading imports the engine: not counted
            _honest[key] = peak_growth(lambda: grade_path(path, limits=QUICK))[1] or 0
        else:
            _honest[key] = grade_in_subprocess(path, check_growth=False)["grew"]
    return _honest[key]


def assert_grader_bounded(grew: int | None, what: str, key: str = "in process") -> None:
    if grew is None:
        return
    allowed = honest_growth(key) + GRADER_SLACK
    assert grew <= allowed, (f"{what}: the grader's peak memory rose {grew / 2**20:.0f} MB, over an honest "
                             f"grading's {honest_growth(key) / 2**20:.0f} MB + 256 MB")


def grade(path: Path, limits: Limits = QUICK):
    from backprop_traps.grader.engine.run import grade_path
    honest_growth()
    result, grew = peak_growth(lambda: grade_path(path, limits=limits))
    assert_grader_bounded(grew, f"grading {path.name}")
    return result


def everything_said(result) -> str:
    """All the text a result carries (feedback, output, warnings, errors): where a leak would show."""
    return json.dumps(result.to_json()) + (result.output or "")


def leftover_sandboxes(pid: int | None = None) -> list[Path]:
    """The sandbox cgroups of grading process ``pid`` (this one by default) still on the host."""
    found = []
    for folder in cgroup.sandbox_parents() if cgroup.available()[0] else []:
        if folder.is_dir():
            found += list(folder.glob(f"backprop-traps-{pid or os.getpid()}-*"))
    return found


@pytest.fixture
def mode(request, monkeypatch):
    """Switch to a sandbox mode (a fallback, or the default) for the test, caches cleared."""
    def use(name: str):
        for key in (bwrap.FORCE_OFF, cgroup.DISABLE):
            monkeypatch.delenv(key, raising=False)
        for key, value in MODES[name].items():
            monkeypatch.setenv(key, value)
        bwrap.probe.cache_clear()
        request.addfinalizer(bwrap.probe.cache_clear)
        if name in ("default", "no_cgroup") and not bwrap.probe()[0]:
            pytest.skip(f"bubblewrap cannot run here: {bwrap.probe()[1]}")
        return name
    return use


def leaked(result, *secrets_) -> list[str]:
    said = everything_said(result)
    return [s for s in secrets_ if s and s in said]


# -- class 1: vram_trap's memory check alone ---------------------------------------------------
def memory_check(path: Path, limits: Limits = Limits(call_seconds=10.0, total_seconds=30.0), practice=False):
    """Only vram_trap's memory check, run as the engine runs it (a course's, or a learner's own
    ``practice``): (passed, feedback, the measurement, what the child printed)."""
    from backprop_traps.grader.checks import vram_trap
    from backprop_traps.grader.engine.context import CheckContext
    from backprop_traps.grader.engine.question import Fail
    from backprop_traps.grader.loading.questions import questions_root
    from backprop_traps.grader.loading.reference import load_solution
    from backprop_traps.grader.sandbox.process import Sandbox
    from backprop_traps.grader.loading.submission import load_submission

    sub = load_submission(path, None)
    measured = {}
    with Sandbox(sub.source, limits, hide=[questions_root(None), path.resolve().parent],
                 cells=sub.cells, practice=practice) as box:
        call = box.call

        def recording(fn, *args, **kwargs):
            result = call(fn, *args, **kwargs)
            if kwargs.get("measure_memory"):
                measured.update(result.memory or {})
            return result
        box.call = recording
        box.expect_measured_calls(vram_trap.QUESTION.expected_measured_calls)  # as the engine: one child
        honest_growth()
        started, grew = peak_growth(box.start)
        assert started.ok
        assert_grader_bounded(grew, f"loading {path.name}")
        ctx = CheckContext(vram_trap.QUESTION, box, load_solution("vram_trap"), 1, "memory")
        def check():
            try:
                vram_trap.memory_budget_check(ctx)
                return True, ""
            except Fail as fail:
                return False, fail.feedback
        (passed, feedback), grew = peak_growth(check)
        assert_grader_bounded(grew, f"the memory check of {path.name}")
        return passed, feedback, measured, box.output


# -- grading in a fresh process (its memory, its time, its environment) ------------------------
RUNNER = r"""
import json, sys, time
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.sandbox.limits import Limits

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

before, start = hwm(), time.monotonic()
result = grade_path(sys.argv[1], limits=Limits(call_seconds=float(sys.argv[2]), total_seconds=float(sys.argv[3])))
print("RESULT" + json.dumps({"result": result.to_json(), "output": result.output, "grew": hwm() - before,
                             "seconds": time.monotonic() - start}))
"""


def grade_in_subprocess(path: Path, call: float = 4.0, total: float = 20.0, timeout: float = 60.0,
                        env: dict | None = None, argv: tuple = (), check_growth: bool = True) -> dict:
    """Grade in a fresh Python process: its result, the growth of its peak resident memory
    (``grew``, bytes, asserted within an honest grading's + 256 MB), its own time; ``hung``
    when it had to be killed after ``timeout``."""
    full_env = {**os.environ, **(env or {})}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(path), str(call), str(total), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env,
                            cwd=path.parent)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        time.sleep(0.5)
        for group in leftover_sandboxes(proc.pid):  # the killed grader's, left behind
            try:
                group.rmdir()
            except OSError:
                pass
        return {"hung": True, "seconds": time.monotonic() - start}
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert lines, f"the grading process died (exit {done.returncode}): {done.stderr[-2000:]}"
    out = json.loads(lines[-1][len("RESULT"):])
    out["hung"] = False
    out["text"] = json.dumps(out["result"]) + (out.get("output") or "")
    if check_growth:
        assert_grader_bounded(out["grew"], f"grading {path.name} in a fresh process", key="subprocess")
    return out


# -- class 4: escape from clean-up ---------------------------------------------------------------
def processes_with(token: str) -> list[int]:
    """Live (not zombie) processes whose name or command line holds ``token``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    continue
            with open(f"/proc/{entry}/comm", "rb") as f:
                comm = f.read().strip()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, IndexError):
            continue
        if token[:15].encode() in comm or token.encode() in cmdline:
            found.append(int(entry))
    return found


def end_processes(token: str) -> None:
    """Kill what an escaped attack left (by pid, found by its token), until none is left."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        pids = processes_with(token)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


# -- class 5: sabotage of classmates -----------------------------------------------------------
def host_state() -> dict:
    return {"nice": os.getpriority(os.PRIO_PROCESS, 0),
            "nice_group": os.getpriority(os.PRIO_PGRP, 0),
            "nice_session": os.getpriority(os.PRIO_PROCESS, os.getsid(0)),
            "affinity": os.sched_getaffinity(0),
            "scheduler": os.sched_getscheduler(0),
            "limits": {r: resource.getrlimit(r) for r in (resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC,
                                                          resource.RLIMIT_FSIZE)}}


def restore(state: dict) -> None:
    for which, who, key in ((os.PRIO_PROCESS, 0, "nice"), (os.PRIO_PGRP, 0, "nice_group"),
                            (os.PRIO_PROCESS, os.getsid(0), "nice_session")):
        try:
            os.setpriority(which, who, state[key])
        except OSError:
            pass
    os.sched_setaffinity(0, state["affinity"])
    os.sched_setscheduler(0, state["scheduler"], os.sched_param(0))
    for r, value in state["limits"].items():
        try:
            resource.setrlimit(r, value)
        except (OSError, ValueError):
            pass


# -- class 6: state outside every limit ------------------------------------------------------------
def host_traces(token: str) -> list[str]:
    """Where a note of ``token`` could be seen on the host after grading."""
    short, traces = token[-8:], []
    for path in ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/keys", "/proc/key-users"):
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        key_shm, key_msg = int(token[-7:], 16) | 0x10000000, int(token[-7:], 16) | 0x20000000
        for line in text.splitlines()[1:]:
            fields = line.split()
            if short in line or (fields and fields[0].lstrip("-").isdigit() and int(fields[0]) in (key_shm, key_msg)):
                traces.append(f"{path}: {line.strip()}")
    for folder in ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", os.path.expanduser("~"), "/run/lock"):
        try:
            traces += [f"{folder}/{n}" for n in os.listdir(folder) if short in n]
        except OSError:
            pass
    return traces


def clean_host(token: str) -> None:
    """Remove what a contained-or-not note attack left on this machine (ours, by its key/name)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    key_shm, key_msg = int(token[-7:], 16) | 0x10000000, int(token[-7:], 16) | 0x20000000
    shmid = libc.shmget(key_shm, 0, 0)
    if shmid >= 0:
        libc.shmctl(shmid, 0, None)  # IPC_RMID
    qid = libc.msgget(key_msg, 0)
    if qid >= 0:
        libc.msgctl(qid, 0, None)
    for trace in host_traces(token):
        if trace.startswith("/") and not trace.startswith("/proc/"):
            try:
                os.unlink(trace)
            except OSError:
                pass


# -- class 7: privileges ---------------------------------------------------------------------------
def privileges_used(result) -> list[str]:
    """The probes the child reports as allowed (a probe only: a lying child only hides its own
    success; effects on the host are asserted separately)."""
    return [line for line in (result.output or "").splitlines() if line.startswith("PRIV") and "ALLOWED" in line]

# -- class 8: local network -----------------------------------------------------------------------
class Listeners:
    """UDP and TCP on 127.0.0.1, unix sockets by path and abstract: what reaches them."""

    def __init__(self, folder: Path):
        self.got: list[str] = []
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.port = self.udp.getsockname()[1]
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", self.port))
        self.tcp.listen()
        self.path = str(folder / "rt.sock")
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(self.path)
        self.unix.listen()
        self.unix_d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.unix_d.bind(self.path + "d")
        self.name = f"rt-abstract-{secrets.token_hex(6)}"
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.name)
        self.abstract.listen()
        self.abstract_d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.abstract_d.bind("\0" + self.name + "d")
        self.sockets = [self.udp, self.tcp, self.unix, self.unix_d, self.abstract, self.abstract_d]
        for s in self.sockets:
            s.setblocking(False)

    def poll(self) -> list[str]:
        import select
        ready, _, _ = select.select(self.sockets, [], [], 0.2)
        for s in ready:
            try:
                if s.type == socket.SOCK_STREAM:
                    conn, _ = s.accept()
                    self.got.append(f"connection on {s.getsockname()!r}")
                    conn.close()
                else:
                    self.got.append(f"datagram on {s.getsockname()!r}: {s.recv(100)!r}")
            except OSError:
                pass
        return self.got

    def close(self):
        for s in self.sockets:
            s.close()


from report_kit import FORBIDDEN, assert_clean_report, on_terminal  # noqa: E402,F401 (class 10)
