"""benchmarks/machines.py, the VM matrix run by hand before a release (issue 44), without booting
anything: a run's folder becomes its table row, and the systemd machine's root disk image carries
the guest's settings in and its results out with no mount (mke2fs -d, debugfs)."""
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def machines():
    sys.path.insert(0, str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("machines", REPO / "benchmarks" / "machines.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["machines"] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("machines", None)
        sys.path.remove(str(REPO / "benchmarks"))


def test_a_runs_folder_becomes_its_row(machines, tmp_path):
    role = tmp_path / "root"
    role.mkdir()
    (role / "kernel").write_text("6.12.95+deb12-amd64\n")
    (role / "doctor.out").write_text("  yes  cgroup (memory and processes): cgroup v2, the kit's own cgroup\n"
                                     "Memory: measured tamper-proof: by the kernel\n")
    (role / "memory_budget.solution.out").write_text(json.dumps({
        "score": 20, "max_score": 20, "memory": "cgroup v2: tamper-proof", "tests": []}))
    (role / "memory_budget.solution.time").write_text("0 76.4\n")
    (role / "vram_trap.solution.err").write_text("")  # started, never finished
    (role / "tests.out").write_text("..F.s\n")  # the sandbox tests, stopped while running
    newer = next(m for m in machines.MACHINES if m.name == "newer")
    [row] = machines.rows(newer, tmp_path, 150.0, "host load average 1.2-4.5")
    assert "| newer (root) | 6.12.95+deb12-amd64 |" in row
    assert "memory_budget solution: 20/20 [cgroup v2: tamper-proof] 76 s" in row
    assert "vram_trap solution: not finished when the machine stopped" in row
    assert "2.5 min; host load average 1.2-4.5" in row
    assert "stopped while running: 3 passed, 1 failed, 1 skipped so far" in row


def test_the_load_sampler_says_what_it_saw(machines):
    sampler = machines.LoadSampler(every=3600)
    sampler.seen = [1.0, 4.0, 2.0]
    assert sampler.said().startswith("host load average 1.0-4.0 (median 2.0;")


@pytest.mark.skipif(not (shutil.which("mke2fs") and shutil.which("debugfs")), reason="needs e2fsprogs")
def test_the_disk_image_carries_settings_in_and_results_out(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from vm import disk_machine
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    rootfs, kit, repo, out = (tmp_path / n for n in ("rootfs", "kit", "repo", "run"))
    (rootfs / "etc" / "systemd" / "system").mkdir(parents=True)
    (kit / "bin").mkdir(parents=True)
    (repo / "benchmarks" / "vm").mkdir(parents=True)
    (repo / ".git").mkdir()
    (out / "answers").mkdir(parents=True)
    (out / "answers" / "memory_budget.py").write_text("# question: memory_budget\n")
    image = tmp_path / "root.img"
    disk_machine.build(rootfs, repo, kit, out, {"BPT_WHAT": "solution stores"}, image)

    def debugfs(*request):
        return subprocess.run(["debugfs", *request, str(image)], capture_output=True, text=True, check=True).stdout
    assert debugfs("-R", "cat /etc/bpt-guest.env") == 'BPT_WHAT="solution stores"\n'
    assert "guest.sh /out" in debugfs("-R", f"cat /etc/systemd/system/{disk_machine.UNIT}")
    assert ".git" not in debugfs("-R", f"ls {repo}")  # the checkout's files only
    # what the guest would write, then what comes back
    (tmp_path / "score").write_text("20/20")
    debugfs("-w", "-R", "mkdir /out/root")
    debugfs("-w", "-R", f"write {tmp_path / 'score'} /out/root/memory_budget.solution.out")
    disk_machine.results(image, out)
    assert (out / "root" / "memory_budget.solution.out").read_text() == "20/20"
