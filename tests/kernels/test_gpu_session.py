"""benchmarks/gpu_session.py without a GPU: its preflight's sentences, its plan and budget, the
clone made importable without installing, and the report it writes from each step's output."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REAL_GPU, REPO

sys.path.insert(0, str(REPO))
from benchmarks import gpu_session  # noqa: E402


def metadata(numpy="2.5.2", numba="0.68.0", numba_requires=("llvmlite<0.52,>=0.51", "numpy<2.5,>=1.24")):
    from importlib.metadata import PackageNotFoundError

    def version(name):
        found = {"numpy": numpy, "numba": numba}.get(name)
        if found is None:
            raise PackageNotFoundError(name)
        return found
    return version, lambda name: list(numba_requires)


def test_a_numpy_newer_than_numba_supports_is_one_sentence():
    said = gpu_session.numpy_numba_mismatch(*metadata())
    assert said.startswith("numba 0.68.0 supports numpy <2.5,>=1.24, but numpy 2.5.2 is installed")
    assert "--wheels" in said and "\n" not in said and "Traceback" not in said
    assert gpu_session.numpy_numba_mismatch(*metadata(numpy="2.4.6")) is None
    assert gpu_session.numpy_numba_mismatch(*metadata(numba_requires=("numpy<2.6,>=1.22",))) is None
    missing = gpu_session.numpy_numba_mismatch(*metadata(numba=None))
    assert missing.startswith("numba is not installed")


@pytest.mark.parametrize("version, spec, ok", [
    ("2.5.2", "<2.5,>=1.24", False), ("2.4.6", "<2.5,>=1.24", True), ("2.5.0", "<2.6", True),
    ("1.23.5", ">=1.24", False), ("2.0.0+cpu", ">=2.0", True), ("2.5", "!=2.5.*", False), ("2.4", "==2.4.*", True),
])
def test_version_specifiers(version, spec, ok):
    assert gpu_session._satisfies(version, spec) == ok


def test_the_plan_fits_well_inside_ten_minutes(tmp_path):
    assert sum(gpu_session.BUDGET.values()) <= 480
    plan = {name: (argv, budget) for name, argv, budget in gpu_session.steps(set(), tmp_path / "out.md")}
    assert list(plan) == ["tests", "bench", "racecheck", "memcheck"]
    tests = " ".join(plan["tests"][0])
    assert "tests/kernels" in tests and "--deselect tests/kernels/test_kernels_static.py" in tests
    assert "--max-seconds" in plan["bench"][0] and "--runs" in plan["bench"][0]
    for tool in ("racecheck", "memcheck"):
        argv = plan[tool][0]
        assert argv[:3] == ["compute-sanitizer", "--tool", tool] and "--check-only" in argv
        assert argv[argv.index("--questions") + 1] == ",".join(gpu_session.SHARED_MEMORY)
    assert [name for name, *_ in gpu_session.steps({"tests", "sanitize"}, tmp_path)] == ["bench"]


def test_the_clone_is_importable_without_installing(tmp_path):
    site = gpu_session.kit_site(tmp_path)
    done = subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path[:0] = [{str(site)!r}]; "
                           "import backprop_traps.kernels.launch_limits as m; print(m.__file__)"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == REPO / "kernels" / "launch_limits.py"


def test_the_report_reads_each_steps_outcome(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_session, "versions", lambda env: "Python 3.12, numpy 2.4.6")
    results = [
        {"name": "tests", "seconds": 95, "code": 1,
         "output": "....F\nFAILED tests/kernels/test_x.py::test_y - boom\n== 1 failed, 250 passed, 12 skipped in 90.1s =="},
        {"name": "bench", "seconds": 200.4, "code": None, "output": "GPU: NVIDIA H200"},
        {"name": "racecheck", "seconds": 30, "code": 0, "output": "========= RACECHECK SUMMARY: 0 hazards displayed "
                                                                  "(0 errors, 0 warnings)\n"},
        {"name": "memcheck", "seconds": 31, "code": 0, "output": "========= ERROR SUMMARY: 0 errors\n"},
    ]
    text = gpu_session.report(results, tmp_path / "absent.md", {})
    assert "The benchmark did not write its table" in text and "## GPU session" in text
    assert "| tests | 180 s | 95 s | 1 failed, 250 passed, 12 skipped; failed: tests/kernels/test_x.py::test_y |" in text
    assert "| bench | 200 s | 200 s | stopped at its budget (200 s) |" in text
    assert "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" in text
    assert "ERROR SUMMARY: 0 errors" in text


@pytest.mark.skipif(REAL_GPU, reason="on a GPU the session would run for minutes")
def test_without_a_gpu_it_says_so_in_one_sentence_and_writes_nothing(tmp_path):
    out = tmp_path / "kernels_gpu.md"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_session.py"), "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.startswith("This machine cannot run the GPU session: ") and "GPU" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr and not out.exists()


def test_the_benchmark_refuses_an_unknown_kernel_module(capsys):
    from backprop_traps.grader.commands.bench import load_benchmark
    with pytest.raises(SystemExit) as exit_info:
        load_benchmark().main(["--check-only", "--questions", "routing_trap,no_such"])
    assert exit_info.value.code == 2 and "no cases for no_such" in capsys.readouterr().err
