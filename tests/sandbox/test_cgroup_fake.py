"""The cgroup logic, v1 and v2, against a fake kernel in a temporary folder (tests/cgroup_fake.py):
independent of this machine's cgroup version and privileges (issue 39).

Where the groups go (as root, in a delegated subtree with systemd's leaf pattern, in the v1
hierarchies), which controllers are taken, what an error from each write does, the peak and
its per-descriptor reset, and held memory counted by what it is (issue 35)."""
import errno

import pytest

from backprop_traps.grader.sandbox import cgroup, cgroup_place, cgroupfs, systemd_scope
from backprop_traps.grader.sandbox.limits import Limits
from backprop_traps.grader.sandbox.measure import PRACTICE, CgroupMeter
from backprop_traps.grader.sandbox.measure import create as measure_create
from backprop_traps.grader.sandbox.practice_meter import PracticeMeter
from cgroup_fake import FakeKernel

MiB = 2 ** 20
SCOPE = "/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope"
SESSION = "/user.slice/user-1000.slice/session-2.scope"


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    """``kernel(**layout)``: a fake cgroup kernel, used by the kit for this test."""
    monkeypatch.delenv(cgroup.DISABLE, raising=False)
    monkeypatch.setattr(systemd_scope, "user_manager_running", lambda: False)

    def make(**layout) -> FakeKernel:
        fake = FakeKernel(tmp_path / "cgroup", **layout)
        monkeypatch.setattr(cgroupfs, "fs", fake)
        monkeypatch.setattr(cgroup_place, "ROOT", fake.root)
        cgroup_place.forget()
        return fake
    yield make
    cgroup_place.forget()


def not_writable_above(fake: FakeKernel, below) -> None:
    """Every folder from the root down to ``below`` (excluded) is root's, not ours."""
    folder = below.parent
    while True:
        fake.read_only.add(folder)
        if folder == fake.root:
            return
        folder = folder.parent


# -- where the groups go ----------------------------------------------------------------------
def test_as_root_the_kit_makes_a_cgroup_of_its_own_under_the_root(kernel):
    fake = kernel(own=SESSION)
    place = cgroup.placement()
    assert place.version == 2 and place.memory == fake.root / "backprop-traps"
    assert place.controllers == ("memory", "pids") and place.caps_processes
    assert fake.procs(fake.own_v2) == [4242, 4243], "as root the grader stays where it is"
    assert "the kit's own cgroup under the root" in place.detail and "memory, pids" in place.detail
    version, said = cgroup.available()
    assert version == 2 and str(place.memory) in said


def test_in_a_delegated_subtree_the_grader_moves_into_a_leaf(kernel):
    fake = kernel(own=SCOPE)
    not_writable_above(fake, fake.own_v2)
    place = cgroup.placement()
    leaf = fake.own_v2 / cgroup_place.LEAF
    assert place.version == 2 and place.memory == fake.own_v2 and place.caps_processes
    assert fake.procs(fake.own_v2) == [] and fake.procs(leaf) == [4242, 4243], "every process moved"
    assert fake.read(fake.own_v2 / "cgroup.subtree_control").split() == ["memory", "pids"]
    assert "delegated subtree" in place.detail and cgroup_place.LEAF in place.detail
    assert fake.self_cgroup().strip().endswith(f"run-r1.scope/{cgroup_place.LEAF}")


def test_a_grader_already_in_the_leaf_uses_its_parent(kernel):
    """A batch's grading processes start in the leaf their parent moved into."""
    fake = kernel(own=SCOPE)
    not_writable_above(fake, fake.own_v2)
    first = cgroup.placement()
    cgroup_place.forget()
    writes = len(fake.writes)
    again = cgroup.placement()
    assert again.memory == first.memory and again.controllers == first.controllers
    assert len(fake.writes) == writes, "nothing moved or enabled a second time"
    assert "is in its leaf" in again.detail


def test_a_subtree_that_delegates_memory_alone_is_still_a_meter_and_forks_are_refused(kernel):
    fake = kernel(own=SCOPE, enabled=("memory",))
    not_writable_above(fake, fake.own_v2)
    with pytest.raises(FileNotFoundError):  # the kernel's own rule: +pids refuses the whole write
        fake.write(fake.own_v2 / "cgroup.subtree_control", "+memory +pids")
    place = cgroup.placement()
    assert place.version == 2 and place.controllers == ("memory",) and not place.caps_processes
    assert "no pids controller: the sandbox may not fork" in place.detail
    group = cgroup.create(256 * MiB, 64)
    try:
        assert group.pids is None and not group.caps_processes
        assert fake.read(group.memory / "memory.max") == str(256 * MiB)
        assert not (group.memory / "pids.max").exists() and group.load.is_dir()
        meter = measure_create(Limits(), isolate=True)
        assert isinstance(meter, CgroupMeter) and meter.whole_sandbox and not meter.caps_processes
        meter.close()
    finally:
        group.remove()


def test_pids_refused_with_enoent_leaves_memory_enabled(kernel):
    """The probe on a 6.18 machine: the subtree lists pids, yet +pids fails (ENOENT)."""
    fake = kernel(own=SCOPE)
    not_writable_above(fake, fake.own_v2)
    fake.fail["cgroup.subtree_control=+pids"] = errno.ENOENT
    place = cgroup.placement()
    assert place.version == 2 and place.controllers == ("memory",) and not place.caps_processes


def test_an_undelegated_cgroup_says_why_and_the_command_that_fixes_it(kernel, monkeypatch):
    fake = kernel(own=SESSION)
    not_writable_above(fake, fake.own_v2 / "x")  # the session scope itself is root's too
    version, said = cgroup.available()
    assert version == 0 and "not writable" in said and "session-2.scope" in said
    monkeypatch.setattr(systemd_scope, "user_manager_running", lambda: True)
    cgroup_place.forget()
    _, said = cgroup.available()
    assert "systemd-run --user --scope -p Delegate=yes grade FILE" in said, said
    assert cgroup.create(256 * MiB, 64) is None


def test_on_a_hybrid_machine_v1_is_used_as_before(kernel):
    fake = kernel(version=1, own="/grading")
    (fake.root / "unified").mkdir()
    (fake.root / "unified" / "cgroup.controllers").write_text("hugetlb")
    place = cgroup.placement()
    assert place.version == 1 and place.memory == fake.root / "memory" / "grading"
    assert place.pids == fake.root / "pids" / "grading" and place.cpu == fake.root / "cpu" / "grading"
    group = cgroup.create(256 * MiB, 64, cpus=0.5)
    try:
        assert fake.read(group.memory / "memory.limit_in_bytes") == str(256 * MiB)
        assert fake.read(group.pids / "pids.max") == "64"
        assert fake.read(group.cpu / "cpu.cfs_quota_us") == "50000"
        assert [p.name for p in group.procs_files] == ["cgroup.procs"] * 3
    finally:
        group.remove()
    assert not list((fake.root / "memory" / "grading").glob("backprop-traps-*"))


def test_switched_off_means_none_whatever_the_machine(kernel, monkeypatch):
    kernel(own=SESSION)
    monkeypatch.setenv(cgroup.DISABLE, "1")
    assert cgroup.available() == (0, "cgroups switched off (BACKPROP_TRAPS_NO_CGROUP=1)")
    assert cgroup.create(256 * MiB, 64) is None


# -- an error from each write -------------------------------------------------------------------
@pytest.mark.parametrize("file", ["cgroup.procs", "cgroup.subtree_control=+memory", "mkdir"])
def test_a_failing_write_while_placing_means_no_cgroup_with_the_reason(kernel, file):
    fake = kernel(own=SCOPE)
    not_writable_above(fake, fake.own_v2)
    fake.fail[file] = errno.EACCES
    version, said = cgroup.available()
    assert version == 0 and "could not be set up (Permission denied)" in said, said


@pytest.mark.parametrize("file", ["memory.max", "memory.swap.max", "pids.max", "cpu.max",
                                  "cgroup.subtree_control=+memory"])
def test_a_failing_write_while_making_a_v2_sandbox_group_stops_it_and_leaves_nothing(kernel, file):
    fake = kernel(own=SESSION, enabled=("memory", "pids", "cpu"), offered=("memory", "pids", "cpu"))
    place = cgroup.placement()
    assert place.version == 2
    fake.fail[file] = errno.ENOSPC
    with pytest.raises(cgroup.CgroupError, match="could not be made"):
        cgroup.create(256 * MiB, 64)
    assert not list(place.memory.glob("backprop-traps-*")), "a half-made group was left behind"


@pytest.mark.parametrize("file", ["memory.limit_in_bytes", "pids.max", "cpu.cfs_quota_us", "mkdir"])
def test_a_failing_write_while_making_a_v1_sandbox_group_stops_it_and_leaves_nothing(kernel, file):
    fake = kernel(version=1, own="/grading")
    fake.fail[file] = errno.ENOSPC
    with pytest.raises(cgroup.CgroupError):
        cgroup.create(256 * MiB, 64)
    for hierarchy in ("memory", "pids", "cpu"):
        assert not list((fake.root / hierarchy / "grading").glob("backprop-traps-*")), hierarchy


# -- peaks, resets and what is held ----------------------------------------------------------
def _stat(path, **values) -> None:
    path.write_text("".join(f"{k} {v}\n" for k, v in values.items()))


def test_held_memory_is_counted_by_what_it_is_not_by_the_lru_list_it_sits_on(kernel):
    """Issue 35: a pool freed with MADV_FREE sits on the inactive file list but stays anonymous;
    usage less the file lists counted 0 of it (vram_trap 12/12), anon counts all of it."""
    fake = kernel(own=SESSION)
    group = cgroup.create(512 * MiB, 64)
    try:
        _stat(group.load / "memory.stat", anon=100 * MiB, file=3 * MiB, kernel=MiB, shmem=2 * MiB, sock=0,
              active_file=MiB, inactive_file=102 * MiB)  # the freed pool on the file list
        (group.load / "memory.current").write_text(str(104 * MiB))
        assert group.held(group.load) == 103 * MiB  # anon + shmem + kernel: the page cache is not
        _stat(group.load / "memory.stat", anon=10 * MiB, shmem=0, sock=MiB, kernel_stack=MiB, slab=MiB,
              pagetables=MiB, percpu=0)  # before Linux 5.18: no 'kernel' line
        assert group.held(group.load) == 14 * MiB
    finally:
        group.remove()


def test_held_memory_under_v1_reads_rss_shmem_and_kernel_memory(kernel):
    fake = kernel(version=1, own="/grading")
    group = cgroup.create(512 * MiB, 64)
    try:
        _stat(group.load / "memory.stat", cache=40 * MiB, rss=100 * MiB, shmem=5 * MiB,
              inactive_file=130 * MiB, active_file=0)
        (group.load / "memory.kmem.usage_in_bytes").write_text(str(2 * MiB))
        assert group.held(group.load) == 107 * MiB
        fake.write(group.load / "memory.usage_in_bytes", str(3 * MiB))
        group.reset_peak(group.load)
        assert fake.read(group.load / "memory.max_usage_in_bytes") == str(3 * MiB)
    finally:
        group.remove()


def _measured_call(fake, practice=False):
    """A cgroup meter's whole measured call on the fake kernel: (meter, group, reading)."""
    meter = measure_create(Limits(), isolate=True, practice=practice)
    group = meter.group
    _stat(group.load / "memory.stat", anon=5 * MiB, file=20 * MiB, kernel=0, shmem=0, sock=0)
    meter.start()
    _stat(group.load / "memory.stat", anon=9 * MiB, file=20 * MiB, kernel=0, shmem=0, sock=0)  # a pool filled at load
    (group.load / "memory.current").write_text(str(29 * MiB))
    meter.begin_call()
    call = group.call
    (call / "memory.peak").write_text(str(50 * MiB))
    fake.fd_peaks[group.load / "memory.peak"] = 31 * MiB  # the load group grew 2 MiB during the call
    return meter, group, meter.read({"op": "call", "fn": "f", "args": []})


def test_a_v2_call_counts_its_group_the_older_groups_growth_and_what_they_hold(kernel):
    fake = kernel(own=SESSION)
    meter, group, reading = _measured_call(fake)
    try:
        assert group.call.name == "call-1" and reading["meter"] == "cgroup v2: tamper-proof"
        assert reading["held_from_load"] == 4 * MiB
        assert reading["above_baseline"] == 50 * MiB + 2 * MiB + 4 * MiB
    finally:
        meter.close()
    assert not list(fake.root.glob("backprop-traps/backprop-traps-*")), "the group was removed"


def test_before_linux_6_12_the_older_groups_are_frozen_instead_of_reset(kernel):
    """memory.peak cannot be reset before 6.12: the load group may then not grow at all."""
    fake = kernel(own=SESSION, peak_reset=False)
    meter, group, reading = _measured_call(fake)
    try:
        assert fake.read(group.load / "memory.max") == str(29 * MiB)  # frozen at its usage
        assert reading["above_baseline"] == 50 * MiB + 4 * MiB  # no growth to count: it could not grow
    finally:
        meter.close()


def test_without_memory_peak_a_course_gets_no_number_and_practice_the_practice_meter(kernel):
    """cgroup v2 before Linux 5.19 keeps no peak: the group still caps, but measures nothing."""
    fake = kernel(own=SESSION, has_peak=False)
    course = measure_create(Limits(), isolate=True)
    try:
        assert course.whole_sandbox and not course.measures
        assert "5.19" in course.why and "course" in course.why
        assert course.read({})["peak"] is None
    finally:
        course.close()
    practice = measure_create(Limits(), isolate=True, practice=True)
    try:
        assert isinstance(practice, PracticeMeter) and practice.whole_sandbox and practice.caps_processes
        assert practice.label == PRACTICE
    finally:
        practice.close()


def test_a_measured_call_moves_every_process_into_its_own_group(kernel):
    fake = kernel(own=SESSION)
    group = cgroup.create(256 * MiB, 64)
    try:
        fake._set_procs(group.load, [4243])
        assert group.begin_call() and group.begin_call()
        assert fake.procs(group.memory / "call-2") == [4243] and fake.procs(group.load) == []
        assert [c.name for c in group.calls] == ["call-1", "call-2"]
        group.kill_all(wait_seconds=0.1)
        assert ("backprop-traps/" + group.memory.name + "/cgroup.kill", "1") in fake.writes
    finally:
        group.remove()


def test_a_dead_graders_groups_are_reaped(kernel):
    fake = kernel(own=SESSION)
    place = cgroup.placement()
    stale = place.memory / "backprop-traps-999999999-dead"
    fake.mkdir(stale)
    fake.write(stale / "cgroup.subtree_control", "+memory")
    fake.mkdir(stale / "load")
    fake.mkdir(stale / "call-1")
    group = cgroup.create(256 * MiB, 64)
    group.remove()
    assert not stale.exists()


@pytest.mark.parametrize("file,peak_reset", [("mkdir", True), ("memory.max", False), ("cgroup.procs", True)])
def test_an_error_while_measuring_gives_no_number_and_says_why(kernel, file, peak_reset):
    """A call's group that cannot be made, an older group that cannot be frozen (before 6.12),
    a process that cannot be moved: the call gets no number, never a wrong one."""
    fake = kernel(own=SESSION, peak_reset=peak_reset)
    meter = measure_create(Limits(), isolate=True)
    try:
        _stat(meter.group.load / "memory.stat", anon=0, file=0, kernel=0, shmem=0, sock=0)
        meter.start()
        fake._set_procs(meter.group.load, [4243])  # the sandbox's process, to be moved
        fake.fail[file] = errno.EIO
        meter.begin_call()
        reading = meter.read({"op": "call"})
        assert reading["peak"] is None and "could not be read" in reading["unavailable"], reading
    finally:
        fake.fail.clear()
        meter.close()


@pytest.mark.parametrize("own,readonly", [(SESSION, False), (SCOPE, True)], ids=["as root", "delegated"])
def test_grade_doctor_finds_a_cgroup_v2_and_says_which(kernel, own, readonly):
    """Issue 39: on cgroup v2 (6.18, controllers offered, the grader's own cgroup holding it)
    doctor said "NO cgroup" even as root; now it names the version, subtree and controllers."""
    from click.testing import CliRunner
    from backprop_traps.grader.cli import main
    fake = kernel(own=own)
    if readonly:
        not_writable_above(fake, fake.own_v2)
    out = CliRunner().invoke(main, ["doctor"]).output
    assert "yes  cgroup (memory and processes): cgroup v2, " in out, out
    assert str(cgroup.placement().memory) in out and "controllers memory, pids" in out, out
    if "seccomp filter: seccomp via" in out:
        assert "Memory: measured tamper-proof" in out, out
