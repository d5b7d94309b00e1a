"""Red team, issue 35 class 2: memory held so that it looks evictable, or held where a meter
might not look. Each trick is a stores-everything vram_trap answer (honest score 9/12: its
memory check fails) that hides its activations one way; each must be counted, or refused, in
every isolation level: with a cgroup (the tamper-proof meter, a course's) and without one (a
learner's own practice, the practice meter). Judged by the memory check's verdict and the
grader's own measurement, never by what the child says.
"""
from __future__ import annotations

import pytest

from redteam_kit import build, memory_check, mode  # noqa: F401 (mode: a fixture)

HELD_TRICKS = [
    "memory_madv_free",             # a pool freed with MADV_FREE at load, written during the call
    "memory_dontneed_retouch",      # a pool given back with MADV_DONTNEED at load, touched again
    "memory_mmap_tmp",              # each activation in a file in /tmp, mapped, written, unmapped
    "memory_memfd",                 # each in a memfd
    "memory_sysv_shm",              # each in a SysV shared segment, detached
    "memory_posix_shm",             # each in a POSIX shared segment (shm_open), unmapped
    "memory_thread_outlives_call",  # a thread does the work and still runs after the call returns
]
LEVELS = {"default": False, "no_bwrap": False,          # a cgroup: the tamper-proof meter
          "no_cgroup": True, "no_bwrap_no_cgroup": True}  # none: a learner's practice meter
"""Each isolation level, and whether it is graded as a learner's practice (its only meter)."""
NOISE = 1 << 20  # two activations of vram_trap's memory check


@pytest.mark.parametrize("where", sorted(LEVELS))
@pytest.mark.parametrize("name", HELD_TRICKS)
def test_held_memory_is_counted_or_refused(tmp_path, mode, name, where):
    """Counted: the check fails on memory ("over the budget", the activations in the number).
    Refused: the trick itself fails inside the sandbox (an error, or a plain copy kept, which
    is counted). Never a pass, and never "cannot be measured" where a meter exists."""
    mode(where)
    passed, feedback, measured, output = memory_check(build(name, tmp_path, free=True), practice=LEVELS[where])
    assert not passed, f"{name} passed the memory check ({where}): {measured} {output[-300:]}"
    assert "cannot be measured" not in feedback, (where, feedback)
    if "over the budget" in feedback:
        assert measured["peak"] > 15 * 2 ** 20, (where, measured)  # 36 activations of 0.5 MiB, about
    else:
        assert any(w in feedback for w in ("raised", "Error", "crashed")), (name, where, feedback)


@pytest.mark.parametrize("where", sorted(LEVELS))
def test_madv_free_is_refused(tmp_path, mode, where):
    mode(where)
    _, _, _, output = memory_check(build("memory_madv_free", tmp_path, free=True), practice=LEVELS[where])
    assert "MADV_FREE refused (22)" in output, output[-300:]  # EINVAL, as a kernel without the advice


@pytest.mark.parametrize("where", sorted(LEVELS))
def test_a_pool_freed_with_madv_free_counts_even_where_the_advice_is_allowed(tmp_path, mode, monkeypatch, where):
    """The count holds without the seccomp refusal too: held memory is anonymous memory
    wherever its pages sit (the file LRU list, for MADV_FREE), not usage less the file lists."""
    mode(where)
    from backprop_traps.grader.sandbox import seccomp
    monkeypatch.setattr(seccomp, "EVICTING_ADVICE", ())
    seccomp.compiled.cache_clear()
    try:
        _, _, plain, _ = memory_check(build("memory_madv_free", tmp_path, filename="plain.py", free=False),
                                      practice=LEVELS[where])
        passed, feedback, freed, output = memory_check(build("memory_madv_free", tmp_path, free=True),
                                                       practice=LEVELS[where])
    finally:
        seccomp.compiled.cache_clear()
    if "no_bwrap" in where:  # the worker loads its own filter from its own copy of seccomp.py
        assert "MADV_FREE" in output, output[-300:]
    else:
        assert "MADV_FREE done" in output, f"the advice was refused, so this tests nothing: {output[-300:]}"
    assert not passed and "over the budget" in feedback, (where, freed, feedback)
    assert freed["peak"] >= plain["peak"] - NOISE, (where, plain, freed)


@pytest.mark.parametrize("where", ["no_cgroup", "no_bwrap_no_cgroup"])
@pytest.mark.parametrize("name", ["memory_tmp_files", "memory_socket_buffers", "memory_pipes", "memory_pool_at_load",
                                  "memory_junk_at_load", "memory_thread", "memory_fork", "memory_clear_refs",
                                  "memory_worker_patch", "memory_pool_from_earlier_call", "memory_evict_page_cache"])
def test_the_earlier_memory_attacks_fail_under_the_practice_meter_too(tmp_path, mode, name, where):
    """Not tamper-proof by design (a learner alone has no one to cheat), yet on a machine with
    Landlock and seccomp every earlier forging attack still fails: resetting the worker's own
    peak (clear_refs) is refused, and without a cgroup nothing beyond the worker may hold memory."""
    from backprop_traps.grader.sandbox import landlock
    if name == "memory_clear_refs" and not landlock.abi_version():
        pytest.skip("without Landlock the worker may reset its own peak: the practice meter is not tamper-proof")
    mode(where)
    passed, feedback, measured, output = memory_check(build(name, tmp_path, evict=True), practice=True)
    assert not passed, f"{name} passed under the practice meter ({where}): {measured}"
    assert "cannot be measured" not in feedback, feedback
