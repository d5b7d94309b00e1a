"""Red team of the grader's trust boundary (issue 13), part 1: the scores (forged memory and
cost), reading what must stay hidden, escaping clean-up, sabotaging the grader and classmates.

Every test asserts containment by an objective criterion: the score (never above the honest
score), what the grading process and the host show from outside (files, processes, the
grader's own niceness, limits, affinity), never what the child says. Helpers, modes and the
attack format: redteam_kit.py; part 2 (host state, privileges, network, the grader process,
the report): test_redteam_host.py.
"""
from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from backprop_traps.grader.sandbox.limits import Limits
from redteam_kit import (RUNNER, build, end_processes, everything_said, grade, grade_in_subprocess,  # noqa: F401
                         host_state, leaked, leftover_sandboxes, memory_check, mode, processes_with,
                         restore)  # mode: a fixture


# -- class 1: forged memory score (vram_trap) -------------------------------------------------
MEMORY_ATTACKS = ["memory_tmp_files", "memory_memfd", "memory_sysv_shm", "memory_mmap_tmp",
                  "memory_socket_buffers", "memory_pipes", "memory_pool_at_load", "memory_junk_at_load",
                  "memory_thread", "memory_fork", "memory_clear_refs", "memory_worker_patch"]


@pytest.mark.parametrize("name", MEMORY_ATTACKS)
def test_memory_score_cannot_be_forged(tmp_path, name):
    """A stores-everything answer (honest score 9/12: its memory check fails) keeps failing the
    memory check whatever it does to hide its activations from the meter."""
    passed, feedback, measured, output = memory_check(build(name, tmp_path))
    assert not passed, f"{name} passed the memory check: {measured}"
    assert "over the budget" in feedback, feedback  # right gradients: failed on memory alone


@pytest.mark.parametrize("name", ["memory_worker_patch", "memory_pool_from_earlier_call"])
def test_stores_everything_forged_stays_at_9_of_12_end_to_end(tmp_path, name):
    """Graded as a learner's file is: the memory check's call runs in the sandbox that ran the
    checks before it, so a pool an earlier call filled and kept is what it would hide in."""
    result = grade(build(name, tmp_path), Limits(call_seconds=10.0, total_seconds=60.0))
    assert result.error is None and result.max_score == 12
    assert result.score <= 9, [(t.name, t.feedback) for t in result.tests if t.passed]
    memory = next(t for t in result.tests if "peak memory" in t.name)
    assert not memory.passed and "over the budget" in memory.feedback, memory.feedback


@pytest.mark.parametrize("name,where", [
    ("memory_tmp_files", "no_cgroup"),
    ("memory_socket_buffers", "no_cgroup"),
    ("memory_clear_refs", "no_cgroup"),
    ("memory_fork", "no_bwrap_no_cgroup"),
    ("memory_memfd", "no_bwrap_no_cgroup"),
])
def test_memory_score_cannot_be_forged_in_the_fallbacks(tmp_path, mode, name, where):
    mode(where)
    passed, feedback, measured, output = memory_check(build(name, tmp_path))
    if measured.get("peak") is None:  # honest: this platform says it cannot measure, and fails the check
        assert not passed
        return
    assert not passed, f"{name} passed the memory check in mode {where}: {measured}"


EVICTION_NOISE = 1 << 20  # two activations of vram_trap's memory check; the old meter lost 20 MiB


@pytest.mark.parametrize("where", ["default", "no_bwrap", "no_cgroup"])
def test_evicting_page_cache_does_not_lower_the_measured_peak(tmp_path, mode, where):
    """Issue 23, class 1: evicting every file page in reach (posix_fadvise DONTNEED, madvise
    PAGEOUT/COLD) at load time and during the call must not lower the measured peak below
    what the same code measures without the eviction (the old meter read 0 MiB, a pass)."""
    mode(where)
    _, _, plain, _ = memory_check(build("memory_evict_page_cache", tmp_path, filename="plain.py", evict=False))
    passed, feedback, evicted, output = memory_check(build("memory_evict_page_cache", tmp_path, evict=True))
    assert not passed, f"the evicting answer passed the memory check ({where}): {evicted}"
    if plain.get("peak") is None:  # no trustworthy meter here: no number, and no points
        assert evicted.get("peak") is None and "cannot be measured" in feedback, (evicted, feedback)
        return
    assert "EVICTED" in output, "the attack never ran"
    assert evicted["peak"] >= plain["peak"] - EVICTION_NOISE, (where, plain, evicted)


def test_the_call_group_alone_holds_against_eviction(tmp_path, mode, monkeypatch):
    """The same, with the seccomp filter's refusal of eviction taken away: the fresh call
    cgroup counts from zero, so what was evicted was never in its count."""
    mode("default")
    from backprop_traps.grader.sandbox import seccomp
    monkeypatch.setattr(seccomp, "ALWAYS_DENIED",
                        tuple(n for n in seccomp.ALWAYS_DENIED if n not in ("fadvise64", "process_madvise")))
    monkeypatch.setattr(seccomp, "EVICTING_ADVICE", ())
    seccomp.compiled.cache_clear()
    try:
        _, _, plain, _ = memory_check(build("memory_evict_page_cache", tmp_path, filename="plain.py", evict=False))
        passed, _, evicted, output = memory_check(build("memory_evict_page_cache", tmp_path, evict=True))
    finally:
        seccomp.compiled.cache_clear()
    if plain.get("peak") is None:
        pytest.skip("no cgroup here: memory is not measured at all")
    assert "'fadvise': 0" not in output, f"the eviction was refused, so this tests nothing: {output[-300:]}"
    assert not passed and evicted["peak"] >= plain["peak"] - EVICTION_NOISE, (plain, evicted)


# -- class 2: forged cost score (forward_vs_reverse) ------------------------------------------
BYPASS_HONEST = 6  # tests/answers/forward_vs_reverse/bypasses_counter.py: right values, nothing counted


# each attack and the honest answer it is built on (what it must not beat)
COST_ATTACKS = {"cost_pad_dummy": "bypass", "cost_reset_counter": "cost_honest_matrix_chain",
                "cost_rebind_helpers": "bypass", "cost_patch_grader_ask": "bypass",
                "cost_forge_ask_frames": "bypass", "cost_token_product": "bypass"}


@pytest.mark.parametrize("name", sorted(COST_ATTACKS))
def test_cost_score_cannot_be_forged(tmp_path, name):
    """An answer whose products bypass the counted helpers (or whose products are matrix-matrix)
    never scores more than the same answer without the attack, whatever it does to the count."""
    result = grade(build(name, tmp_path))
    assert result.error is None and result.max_score == 12
    honest = BYPASS_HONEST if COST_ATTACKS[name] == "bypass" else \
        grade(build(COST_ATTACKS[name], tmp_path)).score
    cost_checks = [t for t in result.tests if "cost" in t.name or "forward pass" in t.name]
    assert result.score <= honest and not all(t.passed for t in cost_checks), (
        f"{name} got {result.score}/12 with uncounted or matrix-matrix products (honest: {honest})")


@pytest.mark.parametrize("where", ["no_bwrap", "no_bwrap_no_cgroup"])
def test_a_token_product_earns_nothing_in_the_fallbacks(tmp_path, mode, where):
    """Issue 23, class 2: the answer computed uncounted and sent through one token product
    (12/12 before the chain rule) stays at the bypass's score without bubblewrap too."""
    mode(where)
    result = grade(build("cost_token_product", tmp_path))
    assert result.error is None and result.score <= BYPASS_HONEST, [(t.name, t.passed) for t in result.tests]


# -- class 3: reading what it must not ---------------------------------------------------------
@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_course_secret_next_to_the_submission_is_not_readable(tmp_path, mode, where):
    mode(where)
    token = f"rt-secret-{secrets.token_hex(8)}"
    (tmp_path / "course_secret.txt").write_text(token)
    (tmp_path / ".secret").write_text(token)
    path = build("read_secret_next_to_submission", tmp_path,
                 targets="|".join([str(tmp_path / "course_secret.txt"), str(tmp_path / ".secret"), str(tmp_path)]))
    result = grade(path)
    assert not leaked(result, token), "the secret next to the submission was read"
    assert result.score == result.max_score


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_course_secret_in_the_working_folder_is_not_readable(tmp_path, monkeypatch, mode, where):
    mode(where)
    token = f"rt-secret-{secrets.token_hex(8)}"
    cwd = tmp_path / "course"
    cwd.mkdir()
    (cwd / "secret.txt").write_text(token)
    (cwd / "course_secret").write_text(token)
    monkeypatch.chdir(cwd)
    folder = tmp_path / "subs"
    folder.mkdir()
    result = grade(build("read_secret_in_cwd", folder, targets="|".join([str(cwd / "secret.txt"), str(cwd)])))
    assert not leaked(result, token), "the secret in the working folder was read"
    assert "LIST " + str(cwd) not in everything_said(result), "the working folder was listed"
    assert result.score == result.max_score


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_classmates_submissions_are_not_readable(tmp_path, mode, where):
    mode(where)
    token = f"rt-classmate-{secrets.token_hex(8)}"
    other = tmp_path / "bob_forward_vs_reverse.py"
    other.write_text(f"# question: forward_vs_reverse\n# {token}\n")
    (tmp_path / "carol").mkdir()
    (tmp_path / "carol" / "answer.py").write_text(f"# {token}\n")
    result = grade(build("read_classmates", tmp_path, filename="alice_forward_vs_reverse.py",
                         targets="|".join([str(other), str(tmp_path / "carol" / "answer.py")])))
    assert not leaked(result, token), "a classmate's submission was read"
    assert not re.search(r"LIST \S+ bob_forward_vs_reverse", everything_said(result)), "the class folder was listed"


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_kit_sources_are_not_readable(tmp_path, mode, where):
    mode(where)
    checks = REPO / "grader" / "checks" / "forward_vs_reverse.py"
    solution = REPO / "solutions" / "07_forward_vs_reverse.ipynb"
    result = grade(build("read_kit_sources", tmp_path,
                         targets="|".join(map(str, [checks, solution, REPO / "grader", REPO / "solutions", REPO]))))
    said = everything_said(result)
    for secret_text in ("Hidden checks for forward_vs_reverse", "BEGIN SOLUTION", "IMPORTED grader",
                        "IMPORTED backprop_traps.grader", "def counted("):
        assert secret_text not in said, f"the kit leaked: {secret_text!r}"
    assert "LIST " + str(REPO) not in said


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_system_private_files_are_not_readable(tmp_path, mode, where):
    mode(where)
    token = f"rt-home-{secrets.token_hex(8)}"
    canaries = [Path("/root") / f".rt-canary-{os.getpid()}", Path("/home") / f".rt-canary-{os.getpid()}"]
    made = []
    try:
        for c in canaries:
            if c.parent.is_dir():
                c.write_text(token)
                made.append(c)
        shadow = Path("/etc/shadow").read_text().splitlines()[0] if Path("/etc/shadow").exists() else ""
        result = grade(build("read_system_files", tmp_path, targets="|".join(map(str, canaries))))
    finally:
        for c in made:
            c.unlink()
    assert not leaked(result, token, shadow), "a private file of the machine was read"


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_grader_environment_is_not_readable(tmp_path, mode, where):
    mode(where)
    token = f"rt-canary-{secrets.token_hex(8)}"
    out = grade_in_subprocess(build("read_grader_env", tmp_path), env={"BACKPROP_TRAPS_RT_CANARY": token})
    assert token not in out["text"], "the grader's environment was read"
    assert out["result"]["score"] == 12


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_other_processes_command_lines_are_not_readable(tmp_path, mode, where):
    mode(where)
    token = f"rt-argv-{secrets.token_hex(8)}"
    out = grade_in_subprocess(build("read_proc_cmdline", tmp_path), argv=(token,))
    assert token not in out["text"], "the grader's command line was read"
    assert "-m pytest" not in out["text"] and "_pytest" not in out["text"], "other processes' command lines were read"
    assert not re.search(r"READ cmdline (?!self)\d+ b'[^']", out["text"]) or "grade_path" not in out["text"]


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_walking_the_workers_objects_finds_no_grader_state(tmp_path, mode, where):
    mode(where)
    token = f"rt-canary-{secrets.token_hex(8)}"
    out = grade_in_subprocess(build("read_gc_walk", tmp_path), env={"BACKPROP_TRAPS_RT_CANARY": token})
    assert token not in out["text"]
    assert out["result"]["score"] == 12


# -- class 4: escape from clean-up ---------------------------------------------------------------
ESCAPES = ["escape_reexec_empty_env", "escape_wiped_environ", "escape_sleeping_daemons", "escape_fork_race"]


@pytest.mark.parametrize("where", ["default", "no_bwrap", "no_bwrap_no_cgroup"])
@pytest.mark.parametrize("name", ESCAPES)
def test_nothing_outlives_grading(tmp_path, mode, name, where):
    if where == "no_bwrap_no_cgroup" and name not in ("escape_reexec_empty_env", "escape_wiped_environ"):
        pytest.skip("the fallback runs the two key escapes only")
    mode(where)
    token = f"rt{secrets.token_hex(6)}"  # 14 characters: fits a process name (comm, 15)
    try:
        result = grade(build(name, tmp_path, token=token))
        left = processes_with(token)
        assert not left, f"{name} left {len(left)} process(es) running after grading ({where})"
        assert not leftover_sandboxes(), f"{name}: a sandbox cgroup outlived grading ({where})"
        assert result.score == result.max_score
    finally:
        end_processes(token)


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_nothing_outlives_a_killed_grader(tmp_path, mode, where):
    """SIGKILL the grading process mid-call (as the OOM killer or a job scheduler would): the
    submission's processes, detached or not, must die with it."""
    mode(where)
    token = f"rt{secrets.token_hex(6)}"
    path = build("escape_grader_killed", tmp_path, token=token)
    # an 8 s call: the escapee starts at load, long before; where it cannot start (no PID
    # namespace) the test waits for the call's timeout, and 20 s waited out cost the suite
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(path), "8", "40"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not processes_with(token) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        if not processes_with(token):
            # without a PID namespace the sandbox may not make processes at all: nothing escapes
            assert where == "no_bwrap", "the attack never started its escapee"
            return
        proc.kill()
        proc.wait()
        time.sleep(1.0)  # PR_SET_PDEATHSIG and bwrap's --die-with-parent act at once; give them a second
        left = processes_with(token)
        assert not left, f"{len(left)} process(es) of the submission outlived the killed grader ({where})"
        # the killed grader's (empty) cgroups are removed by the next grader that starts
        grade(build("honest", tmp_path))
        groups = leftover_sandboxes(proc.pid)
        assert not groups, f"the killed grader's cgroups stay on the host ({where}): {groups}"
    finally:
        proc.kill()
        end_processes(token)
        for group in leftover_sandboxes(proc.pid):  # ours (the killed grader's pid), now empty
            try:
                group.rmdir()
            except OSError:
                pass


# -- class 5: sabotage of classmates -----------------------------------------------------------
@pytest.mark.parametrize("where", ["default", "no_bwrap"])
@pytest.mark.parametrize("name", ["sabotage_setpriority", "sabotage_prlimit", "sabotage_affinity",
                                  "sabotage_signals"])
def test_a_submission_cannot_sabotage_the_grader_or_the_next_one(tmp_path, mode, name, where):
    mode(where)
    before = host_state()
    received = []
    previous = signal.signal(signal.SIGUSR2, lambda *a: received.append(a[0]))
    try:
        grade(build(name, tmp_path))
        after = host_state()
        honest = grade(build("honest", tmp_path))
    finally:
        signal.signal(signal.SIGUSR2, previous)
        restore(before)
    assert after == before, f"{name} changed the grading process ({where}): {before} -> {after}"
    assert not received, f"{name} signalled the grading process ({where})"
    assert honest.score == honest.max_score, [t.feedback for t in honest.tests if not t.passed]


@pytest.mark.parametrize("where", ["default", "no_bwrap"])
def test_sabotage_in_a_batch_leaves_the_next_student_full_marks(tmp_path, mode, where):
    """`grade batch` (the CLI, one grading process at a time): the attackers first, then an honest
    student; the honest one gets full marks in the gradebook."""
    mode(where)
    from click.testing import CliRunner
    from backprop_traps.grader.cli import main
    src = tmp_path / "subs"
    for student, attack in (("aaa_attacker", "sabotage_setpriority"), ("aab_attacker", "sabotage_affinity"),
                            ("aac_attacker", "sabotage_prlimit"), ("zzz_honest", "honest")):
        (src / student).mkdir(parents=True)
        build(attack, src / student, filename="forward_vs_reverse.py")
    before = host_state()
    try:
        run = CliRunner().invoke(main, ["batch", str(src), "-o", str(tmp_path / "out"), "-j", "1",
                                        "--call-timeout", "4", "--total-timeout", "20"])
        after = host_state()
    finally:
        restore(before)
    assert run.exit_code == 0, run.output
    rows = (tmp_path / "out" / "gradebook.csv").read_text().splitlines()
    honest = next(r for r in rows if r.startswith("zzz_honest"))
    assert ",12" in honest, rows
    assert after == before
