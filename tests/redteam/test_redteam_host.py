"""Red team of the grader's trust boundary (issue 13), part 2: state left outside every limit,
privileged acts, the local network, the grading process itself, and the terminal report.

Every test asserts containment by an objective criterion seen from outside the sandbox (the
host's IPC objects, hostname, mounts, Ctrl-Alt-Del setting, the test's own listeners, the
grading process's peak memory and time, the report's characters). Helpers: redteam_kit.py.
"""
from __future__ import annotations

import os
import secrets
import subprocess
import threading
import time
from pathlib import Path

import pytest

from redteam_kit import (Listeners, assert_clean_report, build, clean_host, grade,  # noqa: F401 (mode: a fixture)
                         grade_in_subprocess, host_traces, mode, on_terminal, privileges_used)


# -- class 6: state outside every limit ------------------------------------------------------------
@pytest.mark.parametrize("where", ["default", "no_bwrap"])
@pytest.mark.parametrize("name", ["state_sysv_shm", "state_sysv_msg", "state_keyring", "state_dev_shm",
                                  "state_tmp_files"])
def test_no_note_passes_from_one_submission_to_the_next(tmp_path, mode, name, where):
    mode(where)
    token = f"rt{secrets.token_hex(8)}"
    ipc_before = {p: len(Path(p).read_text().splitlines()) for p in ("/proc/sysvipc/shm", "/proc/sysvipc/msg")}
    try:
        first = grade(build(name, tmp_path, filename="a.py", token=token))
        traces = host_traces(token)
        second = grade(build(name, tmp_path, filename="b.py", token=token))
        ipc_after = {p: len(Path(p).read_text().splitlines()) for p in ipc_before}
    finally:
        clean_host(token)
    assert first.score == first.max_score
    assert "FOUND" not in (second.output or ""), f"{name}: B read A's note ({where}): {second.output[-300:]}"
    assert not traces, f"{name} left state on the host after grading ({where}): {traces}"
    assert ipc_after == ipc_before, f"{name}: System V IPC objects left on the host ({where})"


# -- issue 23, class 4: host-wide per-user resources ------------------------------------------------
def _outside_takes_its_own(locked: str) -> list[str]:
    """What this (the grading) process and the host cannot get right now: an inotify
    instance, a POSIX message queue, an exclusive lock on ``locked``; queued signals and open
    files far above what one sandbox may hold."""
    import ctypes
    import fcntl
    libc = ctypes.CDLL(None, use_errno=True)
    missing = []
    fd = libc.inotify_init1(0)
    missing += [] if fd >= 0 else [f"inotify_init1: errno {ctypes.get_errno()}"]
    os.close(fd) if fd >= 0 else None
    name = f"/rt-outside-{os.getpid()}".encode()
    fd = libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, None)
    missing += [] if fd >= 0 else [f"mq_open: errno {ctypes.get_errno()}"]
    if fd >= 0:
        os.close(fd)
        libc.mq_unlink(name)
    with open(locked) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(f, fcntl.LOCK_UN)
        except OSError as e:
            missing.append(f"flock {locked}: {e}")
    queued = int(next(line for line in Path("/proc/self/status").read_text().splitlines()
                      if line.startswith("SigQ:")).split()[1].split("/")[0])
    missing += [f"{queued} signals queued for this user"] if queued > 1000 else []
    return missing


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_a_sandbox_cannot_exhaust_what_the_host_counts_per_user(tmp_path, mode, where):
    """A submission holding open files, inotify instances, message queues, queued signals,
    io_uring rings and a lock on a shared file, from load time on: meanwhile the grading
    process still gets each of its own, the host's open files stay bounded, and the next
    submission is graded in full."""
    mode(where)
    locked = os.__file__  # readable by every process, the sandbox's too
    files_before = int(Path("/proc/sys/fs/file-nr").read_text().split()[0])
    result, missing, most_files = {}, [], 0
    unavailable_here = {m.split(":")[0] for m in _outside_takes_its_own(locked)}  # before: not the sandbox's doing
    worker = threading.Thread(target=lambda: result.update(
        first=grade(build("host_per_user_resources", tmp_path, locked=locked))))
    worker.start()
    while worker.is_alive():
        missing += [m for m in _outside_takes_its_own(locked) if m.split(":")[0] not in unavailable_here]
        most_files = max(most_files, int(Path("/proc/sys/fs/file-nr").read_text().split()[0]))
        time.sleep(0.05)
    worker.join()
    first = result["first"]
    assert "HELD" in first.output, f"the attack did not run: {first.output[-500:]}"
    assert not missing, f"the sandbox exhausted a per-user resource ({where}): {sorted(set(missing))[:5]}"
    assert most_files - files_before < 20_000, f"one sandbox held {most_files - files_before} open files"
    assert first.score == first.max_score, [t.feedback for t in first.tests if not t.passed]
    honest = grade(build("honest", tmp_path))
    assert honest.score == honest.max_score


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_a_sandbox_cannot_fill_the_hosts_disk(tmp_path, mode, where):
    """Files of the largest allowed size, one after another (1.5 GB in all): the disk the
    grader's temp folder lives on loses less than 100 MB meanwhile."""
    import tempfile
    mode(where)
    folder = tempfile.gettempdir()

    def free():
        info = os.statvfs(folder)
        return info.f_bavail * info.f_frsize
    before, lowest, result = free(), free(), {}
    worker = threading.Thread(target=lambda: result.update(first=grade(build("host_fill_disk", tmp_path))))
    worker.start()
    while worker.is_alive():
        lowest = min(lowest, free())
        time.sleep(0.02)
    worker.join()
    assert "WROTE" in result["first"].output, result["first"].output[-300:]
    assert before - lowest < 100 * 2**20, f"the sandbox filled {(before - lowest) >> 20} MB of the host's disk ({where})"
    assert result["first"].score == result["first"].max_score


@pytest.mark.parametrize("cpus", [1.0, 0.1])
def test_a_sandbox_uses_at_most_its_share_of_the_cpus(tmp_path, mode, cpus):
    """Sixteen busy processes for three seconds: the sandbox's processes together get at most
    its cgroup's CPU quota (one CPU by default), so the grader and neighbouring sandboxes keep
    theirs. A tenth of a CPU shows the quota binds even on a loaded machine."""
    import secrets
    from backprop_traps.grader.sandbox.limits import Limits
    from redteam_kit import QUICK, end_processes, processes_with
    mode("default")
    token = f"rt{secrets.token_hex(6)}"
    ticks = os.sysconf("SC_CLK_TCK")
    used, first_seen, last_seen, result = {}, None, None, {}
    limits = Limits(call_seconds=QUICK.call_seconds, total_seconds=QUICK.total_seconds, cpus=cpus)
    worker = threading.Thread(target=lambda: result.update(
        first=grade(build("host_cpu_hog", tmp_path, token=token), limits)))
    worker.start()
    try:
        while worker.is_alive():
            for pid in processes_with(token):
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                used[pid] = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
                first_seen = first_seen or time.monotonic()
                last_seen = time.monotonic()
            time.sleep(0.02)
        worker.join()
    finally:
        end_processes(token)
    if not used:
        pytest.skip("the hog never ran (no new processes in this sandbox)")
    wall = last_seen - first_seen
    assert sum(used.values()) <= 1.25 * cpus * wall + 0.3, (
        f"the sandbox used {sum(used.values()):.1f} s of CPU in {wall:.1f} s: more than {cpus} CPU")
    assert result["first"].error is None


# -- class 7: privileges ---------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["default", "no_bwrap"])
@pytest.mark.parametrize("name", ["priv_sethostname", "priv_mount", "priv_namespaces", "priv_ptrace_parent",
                                  "priv_kernel_log", "priv_scheduler", "priv_cgroup_files", "priv_reboot"])
def test_privileged_acts_fail(tmp_path, mode, name, where):
    mode(where)
    token = f"rt{secrets.token_hex(8)}"
    hostname = Path("/proc/sys/kernel/hostname").read_text()
    domain = Path("/proc/sys/kernel/domainname").read_text()
    mounts = Path("/proc/self/mountinfo").read_text()
    scheduler = os.sched_getscheduler(0)
    cad = Path("/proc/sys/kernel/ctrl-alt-del").read_text()
    tracers = []
    stop = threading.Event()

    def watch_tracer():
        while not stop.is_set():
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("TracerPid:") and line.split()[1] != "0":
                    tracers.append(line)
            time.sleep(0.01)
    watcher = threading.Thread(target=watch_tracer, daemon=True)
    watcher.start()
    try:
        result = grade(build(name, tmp_path, token=token))
    finally:
        stop.set()
        watcher.join()
        changed_host = Path("/proc/sys/kernel/hostname").read_text() != hostname
        if changed_host:
            Path("/proc/sys/kernel/hostname").write_text(hostname)
        if Path("/proc/sys/kernel/domainname").read_text() != domain:
            Path("/proc/sys/kernel/domainname").write_text(domain)
        cad_after = Path("/proc/sys/kernel/ctrl-alt-del").read_text()
        if cad_after != cad:  # reboot(RB_DISABLE_CAD) went through: undo it
            Path("/proc/sys/kernel/ctrl-alt-del").write_text(cad)
        scheduler_after = os.sched_getscheduler(0)
        os.sched_setscheduler(0, scheduler, os.sched_param(0))
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            if token[-12:] in line:
                subprocess.run(["umount", "-l", line.split()[4]], check=False)
    assert not changed_host, f"{name} renamed the machine ({where})"
    assert token[-12:] not in Path("/proc/self/mountinfo").read_text() and "rt-" + token[-12:] not in mounts
    assert cad_after == cad, f"{name} changed the machine's Ctrl-Alt-Del action with reboot(2) ({where})"
    assert not tracers, f"{name} attached to the grading process with ptrace ({where})"
    assert scheduler_after == scheduler, f"{name} changed the grader's scheduling policy ({where})"
    assert "KMSG" not in (result.output or "") and "KLOG" not in (result.output or ""), "the kernel log was read"
    assert not privileges_used(result), f"{name} ({where}): {privileges_used(result)}"
    assert result.score == result.max_score


# -- class 8: local network -----------------------------------------------------------------------

@pytest.mark.parametrize("where", ["default", "no_bwrap"])
@pytest.mark.parametrize("name", ["net_udp_loopback", "net_tcp_loopback", "net_unix_socket_file", "net_abstract_unix"])
def test_no_local_network(tmp_path, mode, name, where):
    mode(where)
    listeners = Listeners(tmp_path)
    try:
        result = grade(build(name, tmp_path, token=secrets.token_hex(8), port=listeners.port,
                             path=listeners.path, sockname=listeners.name))
        got = listeners.poll()
    finally:
        listeners.close()
    assert not got, f"{name} reached the host's loopback ({where}): {got}"
    assert result.score == result.max_score


# -- class 9: the grader process itself ---------------------------------------------------------------
GROWTH_MB = 500


@pytest.mark.parametrize("name,call,total,most_seconds", [
    ("grader_matmul_amplify", 3, 12, 20),
    ("grader_alias_arrays", 3, 12, 20),
    ("grader_nested_json", 3, 12, 20),
    ("grader_npy_header_2_40", 3, 12, 20),
    ("grader_npy_header_nul", 3, 12, 20),
    ("grader_many_arrays", 3, 12, 20),
    ("grader_frame_2_60", 3, 12, 20),
    ("grader_ask_flood", 2, 8, 10),
    ("grader_print_budget", 1, 4, 15),
    ("grader_big_reply", 3, 12, 30),
])
def test_the_grader_stays_bounded(tmp_path, name, call, total, most_seconds):
    """Whatever the child sends, the grading process's peak memory grows by less than 500 MB (and
    by at most 256 MB over an honest grading's: grade_in_subprocess asserts it), it finishes in
    bounded time, and every failure is a short sentence (no internal error)."""
    out = grade_in_subprocess(build(name, tmp_path), call=call, total=total, timeout=most_seconds + 5)
    assert not out["hung"], f"{name}: grading did not finish within {most_seconds + 5} s (it hung)"
    assert out["seconds"] < most_seconds, f"{name}: grading took {out['seconds']:.0f} s"
    assert out["grew"] < GROWTH_MB * 2**20, f"{name}: the grader's peak memory grew {out['grew'] / 2**20:.0f} MB"
    result = out["result"]
    assert not result.get("error")
    for test in result["tests"]:
        assert not test.get("grader_error"), test["feedback"]
        assert "Traceback" not in test["feedback"] and len(test["feedback"]) < 1500


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_an_honest_file_is_not_failed_for_its_size(tmp_path, mode, where):
    """Issue 23, class 3: a 210,000-element literal list (4 MB) loads and gets full marks, and
    a parse bomb (300,000 names: over the 200,000 values the worker once refused) costs the
    grader nothing: the sandbox parses it."""
    import random
    mode(where)
    table = ", ".join(repr(random.Random(1).random() + i) for i in range(210_000))
    out = grade_in_subprocess(build("honest_big_literal", tmp_path, table=table), call=10, total=60, timeout=120)
    assert not out["hung"] and out["result"]["score"] == 12, out["result"]
    bomb = build("grader_parse_bomb", tmp_path, names="a," * 300_000, calls="f(a, b, c)," * 60_000)
    out = grade_in_subprocess(bomb, call=10, total=60, timeout=120)  # asserts the grader's memory bound
    assert not out["hung"] and out["result"]["score"] == 12, out["result"]


def test_a_notebook_of_millions_of_values_is_refused_before_parsing(tmp_path):
    """Three million empty JSON lists (9 MB) would be 200 MB of objects in the grader: refused
    with a sentence, before json.loads, and the grader's memory stays bounded."""
    path = tmp_path / "bomb.ipynb"
    path.write_text('{"cells": [], "x": [' + "[]," * 3_000_000 + "[]]}")
    out = grade_in_subprocess(path, timeout=60)
    assert "JSON values" in (out["result"]["error"] or ""), out["result"]
    assert out["grew"] < 100 * 2**20, out["grew"]


# -- class 10: the terminal report --------------------------------------------------------------------
REPORT_ATTACKS = ["report_exception_escapes", "report_source_line_escapes", "report_load_warning"]


@pytest.mark.parametrize("name", REPORT_ATTACKS)
def test_the_terminal_report_cannot_be_forged(tmp_path, name):
    path = build(name, tmp_path, esc="\x1b", bidi="\u202e")
    shown = on_terminal([str(path), "--call-timeout", "4", "--total-timeout", "20"], tmp_path)
    assert "Score:" in shown, shown[-2000:]
    assert_clean_report(shown, 8)


def test_a_notebook_of_raising_cells_cannot_flood_the_report(tmp_path):
    """Hunt: each raising cell became one warning line (3,000 cells: a 1.5 MB report). Twenty
    are kept, the rest counted."""
    import json
    from conftest import solution_source
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": solution_source("forward_vs_reverse")}]
    cells += [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
               "source": f"raise ValueError('cell {i} ' + 'x' * 300)"} for i in range(400)]
    path = tmp_path / "flood.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {"backprop_traps": {"question": "forward_vs_reverse"}},
                                "nbformat": 4, "nbformat_minor": 5}))
    result = grade(path)
    shown = json.dumps(result.to_json())
    assert result.score == result.max_score and len(shown) < 64 * 1024, len(shown)
    assert "381 more cells raised while loading" in shown  # 19 shown + 381 = 400


def test_a_file_name_cannot_forge_the_terminal_report(tmp_path):
    """The submission's own file name (chosen by the learner, or by a classmate in a shared
    folder) carries escapes, a carriage return and a bidi override."""
    path = build("report_exception_escapes", tmp_path, filename="answer\x1b[2K\x1b[1A\r\u202e.py")
    shown = on_terminal([str(path), "--call-timeout", "4", "--total-timeout", "20"], tmp_path)
    assert "Score:" in shown, shown[-2000:]
    assert_clean_report(shown, 8)


def test_batch_summary_cannot_be_forged(tmp_path):
    from click.testing import CliRunner
    from backprop_traps.grader.cli import main
    src = tmp_path / "subs"
    evil = src / "eve\x1b[2K\u202e"
    evil.mkdir(parents=True)
    build("report_exception_escapes", evil, filename="forward_vs_reverse.py")
    (evil / "unknown.py").write_text("# question: nope\x1b[1A\x1b[2K\rPASS\n")
    out = tmp_path / "out"
    run = CliRunner().invoke(main, ["batch", str(src), "-o", str(out), "-j", "1",
                                    "--call-timeout", "3", "--total-timeout", "15"])
    summary = (out / "summary.txt").read_text() if (out / "summary.txt").exists() else run.output
    assert_clean_report(summary, 0)
    assert_clean_report(run.output, 0)
