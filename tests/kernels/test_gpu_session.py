"""benchmarks/gpu_session.py without a GPU: its preflight's sentences, its plan and budgets, the
steps' process groups and logs, the report it writes from each step's output, and (in
test_gpu_session_archive.py) the session run from a plain `git archive` with nothing installed."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REAL_GPU, REPO

sys.path.insert(0, str(REPO))
from benchmarks import gpu_session, session_steps  # noqa: E402


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


def test_the_plan_ends_within_eight_minutes_and_says_so_first(tmp_path):
    steps = gpu_session.plan(set(), tmp_path / "out.bench.md", sanitizer_argv0="/cuda/bin/compute-sanitizer")
    total = gpu_session.BUDGET["preflight"] + sum(s.budget for s in steps)
    assert total <= gpu_session.SESSION_S - 20  # room for the report and the versions
    assert [s.name for s in steps] == ["tests", "bench", "racecheck", "memcheck"]
    plan = {s.name: s.argv for s in steps}
    tests = " ".join(plan["tests"])
    assert "tests/kernels" in tests and "--deselect tests/kernels/test_kernels_static.py" in tests
    bench = plan["bench"]
    assert int(bench[bench.index("--max-seconds") + 1]) == gpu_session.BUDGET["bench"] - gpu_session.BENCH_RESERVE_S
    for tool in ("racecheck", "memcheck"):
        argv = plan[tool]
        assert argv[:3] == ["/cuda/bin/compute-sanitizer", "--tool", tool] and "--check-only" in argv
        assert argv[argv.index("--error-exitcode") + 1] == str(gpu_session.ERROR_EXITCODE)
        assert argv[argv.index("--dtypes") + 1] == "float32"  # half the compiles of the check pass
        assert argv[argv.index("--questions") + 1] == ",".join(gpu_session.SHARED_MEMORY)
    text = gpu_session.plan_text(steps, simulate=False)
    assert f"at most {total} s" in text and all(f"  {name}" in text for name in plan)
    assert [s.name for s in gpu_session.plan({"tests", "sanitize"}, tmp_path)] == ["bench"]


def test_the_rehearsal_is_the_gpu_plan_with_three_substitutions(tmp_path):
    """--simulate runs what the GPU would, but for the simulator's environment, the tiny sizes and
    the stand-in in compute-sanitizer's place (and one pytest worker, and its own budgets)."""
    questions = ("adamw_step", "routing_trap")
    gpu = {s.name: s for s in gpu_session.plan(set(), tmp_path / "b.md", questions)}
    sim = {s.name: s for s in gpu_session.plan(set(), tmp_path / "b.md", questions, simulate=True)}
    assert list(gpu) == list(sim) == ["tests", "bench", "racecheck", "memcheck"]
    tests, n = gpu["tests"].argv, gpu["tests"].argv.index("-n")
    assert tests[:n + 1] == sim["tests"].argv[:n + 1] and tests[n + 2:] == sim["tests"].argv[n + 2:]
    assert "tests/kernels/test_adamw_step_kernels.py" in tests and "tests/kernels/test_patterns.py" in tests

    def without_timing(argv):
        timing = ("--runs", "--warmup", "--max-seconds")
        return [a for i, a in enumerate(argv) if a != "--simulate" and a not in timing and argv[i - 1] not in timing]
    assert without_timing(gpu["bench"].argv) == without_timing(sim["bench"].argv)
    assert "--simulate" in sim["bench"].argv
    for tool in ("racecheck", "memcheck"):
        assert gpu[tool].argv[1:] == sim[tool].argv[2:]
        assert sim[tool].argv[1].endswith("sanitizer_stand_in.py") and sim[tool].env == {"NUMBA_ENABLE_CUDASIM": "1"}
        assert gpu[tool].argv[-1] == "adamw_step"  # only the shared-memory modules are sanitized


@pytest.mark.skipif(REAL_GPU, reason="counts the cases under the simulator")
def test_the_sanitizer_budget_is_sized_to_the_compile():
    import numpy as np
    from backprop_traps.kernels.cases import build_cases
    cases = build_cases("tiny", np.float32, questions=gpu_session.SHARED_MEMORY)
    assert len(cases) == gpu_session.SANITIZED_CASES
    compile_s = gpu_session.COMPILE_S_PER_CASE * len(cases)  # one dtype: the steps pass --dtypes float32
    assert gpu_session.BUDGET["racecheck"] >= gpu_session.SANITIZER_START_S + 1.4 * compile_s


def test_the_clone_is_importable_without_installing(tmp_path):
    site = gpu_session.kit_site(tmp_path)
    done = subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path[:0] = [{str(site)!r}]; "
                           "import backprop_traps.kernels.runtime.launch_limits as m; print(m.__file__)"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == REPO / "kernels" / "runtime" / "launch_limits.py"
    assert not (site / "benchmarks").exists()  # a step's "outside the repository" test stays outside it


def outcome(name, code, output, seconds=30.0, budget=None):
    return session_steps.Outcome(name, budget or gpu_session.BUDGET[name], seconds, code, Path(f"r.{name}.log"), output)


def test_the_report_reads_each_steps_outcome(tmp_path):
    outcomes = [
        outcome("tests", 1, "....F\nFAILED tests/kernels/test_x.py::test_y - boom\n"
                            "== 1 failed, 250 passed, 12 skipped in 90.1s ==", seconds=95),
        outcome("bench", None, "GPU: NVIDIA H200", seconds=gpu_session.BUDGET["bench"] + 0.4),
        outcome("racecheck", 0, "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"),
        outcome("memcheck", gpu_session.ERROR_EXITCODE, "========= ERROR SUMMARY: 2 errors\n"),
    ]
    steps = gpu_session.plan(set(), tmp_path / "b.md")
    found = {"python": "3.12.3", "numpy": "2.4.6", "numba": "0.68.0", "numba_cuda": "0.30", "torch": "2.11",
             "backend": "numba-cuda", "gpu": "NVIDIA H200"}
    text = gpu_session.report(outcomes[:2], tmp_path / "absent.md", found, steps, simulate=False, done=False)
    assert "Session in progress: racecheck, memcheck still to run" in text
    text = gpu_session.report(outcomes, tmp_path / "absent.md", found, steps, simulate=False, done=True)
    assert "The benchmark did not write its table" in text and "## GPU session" in text and "progress" not in text
    assert ("| tests | 140 s | 95 s | 1 failed, 250 passed, 12 skipped; failed: tests/kernels/test_x.py::test_y "
            "| r.tests.log |") in text
    b = gpu_session.BUDGET["bench"]
    assert f"| bench | {b} s | {b} s | stopped at its budget ({b} s) | r.bench.log |" in text
    assert "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" in text
    assert "hazards or errors found: ERROR SUMMARY: 2 errors" in text
    assert "numba 0.68.0" in text and "NVIDIA H200" in text


def test_a_step_stopped_at_its_budget_takes_its_whole_process_group(tmp_path):
    """A step's children (pytest's workers, the sanitizer's target) go with it, at its budget and
    when it ends leaving one behind; its output stays in its log."""
    pids = tmp_path / "pids"
    spawn = ("import subprocess, sys, time\n"
             "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']) for _ in range(2)]\n"
             f"open({str(pids)!r}, 'a').write(' '.join(str(k.pid) for k in kids) + ' ')\n"
             "print('started', flush=True)\n"
             "time.sleep(float(sys.argv[1]))\n")
    for wait, expected in (("300", None), ("0", 0)):
        step = session_steps.Step("bench", [sys.executable, "-c", spawn, wait], budget=3 if wait == "300" else 60)
        got = session_steps.run(step, tmp_path, dict(os.environ), tmp_path / f"r.{wait}.log")
        assert got.code == expected and "started" in got.output
        assert "started" in (tmp_path / f"r.{wait}.log").read_text()
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"process {pid} outlived its step"


def test_a_stopped_session_stops_its_running_step_first(tmp_path):
    """SIGTERM to the session (a device run at its time limit, say) takes the running step's
    whole group with it: nothing is left on the GPU."""
    import signal
    import time
    pids = tmp_path / "pids"
    step = ("import subprocess, sys, time\n"
            "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']) for _ in range(2)]\n"
            f"open({str(pids)!r}, 'w').write(' '.join(str(k.pid) for k in kids))\n"
            "time.sleep(300)\n")
    session = (f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
               "from pathlib import Path\n"
               "from benchmarks import session_steps as s\n"
               "s.stop_on_signals()\n"
               f"s.run(s.Step('tests', [sys.executable, '-c', {step!r}], 300), Path('.'), {{}}, "
               f"Path({str(tmp_path / 'r.tests.log')!r}))\n")
    proc = subprocess.Popen([sys.executable, "-c", session], cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not (pids.exists() and len(pids.read_text().split()) == 2) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"process {pid} outlived the stopped session"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))  # a zombie is gone


def test_the_sanitizer_stand_in_takes_the_planned_options_and_refuses_others(capsys):
    from benchmarks import sanitizer_stand_in
    ok = [sys.executable, "-c", "print('target ran')"]
    planned = ["--tool", "racecheck", "--target-processes", "all", "--error-exitcode", "86"]
    assert sanitizer_stand_in.main([*planned, *ok]) == 0
    assert "STAND-IN SUMMARY: racecheck not run (no GPU); the target exited 0" in capsys.readouterr().out
    assert sanitizer_stand_in.main(["--tool", "memcheck", sys.executable, "-c", "raise SystemExit(3)"]) == 3
    for wrong in (["--tool", "nosuch", *ok], ["--leak-check", "full", *ok], ["--tool", "memcheck"]):
        with pytest.raises(SystemExit) as exit_info:
            sanitizer_stand_in.main(wrong)
        assert exit_info.value.code == 2


@pytest.mark.skipif(REAL_GPU, reason="on a GPU the session would run for minutes")
def test_without_a_gpu_it_says_so_in_one_sentence_and_writes_nothing(tmp_path):
    out = tmp_path / "kernels_gpu.md"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_session.py"), "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.startswith("GPU session: the plan")  # the plan first, then why not
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("This machine cannot run the GPU session: ") and "GPU" in last and "--simulate" in last
    assert "Traceback" not in done.stdout + done.stderr and not out.exists()


def test_the_benchmark_refuses_an_unknown_kernel_module(capsys):
    from backprop_traps.grader.commands.bench import load_benchmark
    with pytest.raises(SystemExit) as exit_info:
        load_benchmark().main(["--check-only", "--questions", "routing_trap,no_such"])
    assert exit_info.value.code == 2 and "no cases for no_such" in capsys.readouterr().err
