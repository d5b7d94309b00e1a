"""benchmarks/gpu_session.py as a GPU machine runs it (issue 45): from a plain `git archive` of the
repository, with nothing of the kit installed and only the device image's packages.

CI installs the kit editable, which hid that the archive could not import its own package. Here
every process of a run starts with tests/kernels/device_like/sitecustomize.py (on PYTHONPATH):
it takes the installed kit away (editable finders, old names, any other copy of
backprop_traps) and refuses the kit's dependencies the device image lacks. Then the GPU plan's
own pytest command collects (with BACKPROP_TRAPS_REAL_GPU=1, as on the device), and the
rehearsal (--simulate) runs every step end to end: the kernel tests, the benchmark's checks and
timing path, and the sanitizer steps' argv with a stand-in for compute-sanitizer.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REAL_GPU, REPO

DEVICE_LIKE = Path("tests") / "kernels" / "device_like"  # inside the archive

pytestmark = pytest.mark.skipif(REAL_GPU, reason="the rehearsal of a GPU session, for machines without one")


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """The repository as `git archive` gives it: committed files only (with the working tree's
    uncommitted changes to them, so a developer tests what they are about to commit)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout of the repository to make an archive")
    made = subprocess.run(["git", "stash", "create"], cwd=REPO, capture_output=True, text=True, timeout=120)
    tree = made.stdout.strip() or "HEAD"
    root = tmp_path_factory.mktemp("archive")
    tar = subprocess.run(["git", "archive", "--format=tar", tree], cwd=REPO, capture_output=True, timeout=300)
    assert tar.returncode == 0, tar.stderr.decode()
    subprocess.run(["tar", "-x", "-C", str(root)], input=tar.stdout, check=True, timeout=300)
    assert not (root / ".git").exists() and not list(root.glob("*.egg-info"))
    return root


def device_env(root: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "NUMBA_ENABLE_CUDASIM", "BACKPROP_TRAPS_REAL_GPU", "PYTEST_XDIST_WORKER")}
    env.update(PYTHONPATH=str(root / DEVICE_LIKE), PYTHONUNBUFFERED="1")
    return env


# Run inside the archive: the archive's own gpu_session builds the session's environment and
# plan, then the plan's pytest command runs with --collect-only (one process: -n 0 after -n 8).
COLLECT = """
import subprocess, sys, tempfile
from pathlib import Path
from benchmarks import gpu_session as g
with tempfile.TemporaryDirectory() as tmp:
    env = g.session_env(Path(tmp))
    probe = ("import backprop_traps.grader as g, backprop_traps.kernels.runtime.device as d, importlib.util as u; "
             "print(g.__file__, d.__file__, u.find_spec('nbformat'))")
    where = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp, capture_output=True, text=True)
    print("WHERE", where.stdout.strip(), where.stderr.strip()[-500:])
    tests = next(s for s in g.plan(set(), Path(tmp) / "b.md") if s.name == "tests")
    done = subprocess.run(tests.argv + ["--collect-only", "-n", "0"], cwd=g.REPO, env=env, capture_output=True,
                          text=True)
    print(done.stdout[-3000:], done.stderr[-3000:])
    sys.exit(done.returncode)
"""


def test_the_gpu_plans_tests_collect_from_a_plain_archive(archive):
    done = subprocess.run([sys.executable, "-c", COLLECT], cwd=archive, env=device_env(archive),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    where = next(line for line in done.stdout.splitlines() if line.startswith("WHERE"))
    grader, device, nbformat = where.split()[1:4]
    assert Path(grader) == archive / "grader" / "__init__.py" and "device.py" in device, where
    assert nbformat == "None", "a package the device image lacks was importable: the stand-in leaked"
    collected = done.stdout.split("tests collected")
    assert len(collected) > 1 and " error" not in collected[-1], done.stdout[-3000:]


def test_the_rehearsal_runs_every_step_from_a_plain_archive(archive, tmp_path):
    out = tmp_path / "kernels_gpu.md"
    done = subprocess.run([sys.executable, "benchmarks/gpu_session.py", "--simulate", "--questions", "adamw_step",
                           "--out", str(out)], cwd=archive, env=device_env(archive), capture_output=True, text=True,
                          timeout=1200)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-4000:] + "".join(p.read_text()[-2000:] for p in tmp_path.glob("*.log"))
    assert said.startswith("Rehearsal on the simulator (--simulate): the plan")
    text = out.read_text()
    assert "Numba CUDA kernels on the SIMULATOR" in text and "| AdamW" in text and "FAIL" not in text
    for step in ("tests", "bench", "racecheck", "memcheck"):
        row = next(line for line in text.splitlines() if line.startswith(f"| {step} |"))
        assert row.endswith(f"| kernels_gpu.{step}.log |") and "stopped" not in row, row
        assert (tmp_path / f"kernels_gpu.{step}.log").read_text().startswith("$ ")
    assert " passed" in next(line for line in text.splitlines() if line.startswith("| tests |"))
    assert "STAND-IN SUMMARY: racecheck not run (no GPU); the target exited 0" in text
    assert "in progress" not in text and not (tmp_path / "kernels_gpu.bench.md").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["kernels_gpu.md"] + [f"kernels_gpu.{s}.log" for s in ("tests", "bench", "racecheck", "memcheck")])
