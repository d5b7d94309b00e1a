"""Benchmark: the learner's `grade` on the routing-trap solution, against nbgrader autograde.

Run: python benchmarks/grade_latency.py [--runs 5] [--baseline DIR]
Prints a markdown table (median of cold runs, each a fresh process) and writes it to
benchmarks/results/grade_latency.md with the machine it ran on. The breakdown times the
pieces alone: interpreter start-up and imports (a process that only imports the grade path)
and a sandbox's start (spawn, numpy, Landlock). Inside `grade` they overlap (the sandbox boots
while the grader imports), so they do not add up; grade_profile.py shows the overlap.

What is timed is what a learner runs: the `grade` console script of this Python (not a
version manager's shim on PATH, which is timed apart), with the kit's bytecode compiled, as
pip compiles it when it installs the wheel (an editable install under
PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module on every run). The baseline
gets the same treatment.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOLUTION = REPO / "solutions" / "01_routing_trap.ipynb"


CPU: dict[str, list[float]] = {}
"""label -> CPU seconds (user + system, the grader's and its sandboxes') of each timed `grade`."""


def timed(cmd, cwd=None, cpu_label: str | None = None) -> float:
    """Wall seconds of ``cmd``; with ``cpu_label``, its CPU seconds are kept in ``CPU`` too, from
    the grading's own profile (BACKPROP_TRAPS_PROFILE: a few /proc reads per boundary)."""
    env = None
    if cpu_label is not None:
        log = Path(tempfile.gettempdir()) / f"bpt-latency-{os.getpid()}.jsonl"
        log.unlink(missing_ok=True)
        env = {**os.environ, "BACKPROP_TRAPS_PROFILE": str(log)}
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    elapsed = time.perf_counter() - start
    if cpu_label is not None:
        import json
        total = json.loads(log.read_text().splitlines()[-1])["total"]
        CPU.setdefault(cpu_label, []).append(total["grader_cpu"] + total["sandbox_cpu_seen"])
        log.unlink(missing_ok=True)
    return elapsed


def cpu_of(label: str) -> float:
    """The median CPU seconds of the timed runs under ``label`` (the warm-up run left out)."""
    return statistics.median(CPU[label][1:] or CPU[label])


def timed_env(cmd, env) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def baseline_name(folder) -> str:
    commit = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return f"commit {commit}" if commit else str(folder)


def compile_bytecode(folder: Path) -> None:
    """Write the .pyc files of a checkout's packages, as pip does when it installs a wheel."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    packages = [str(folder / name) for name in ("grader", "kernels") if (folder / name).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], env=env, check=True,
                   stdout=subprocess.DEVNULL)


def console_script() -> str:
    """This Python's own `grade` script (what a venv's PATH finds)."""
    script = Path(sysconfig.get_path("scripts")) / "grade"
    return str(script) if script.exists() else (shutil.which("grade") or "")


def attention_floor(runs: int) -> list[tuple[str, float]]:
    """The attention solution's own forward and backward at the memory checks' size, in this
    process: the compute that no grader can skip (four calls, causal and not)."""
    import numpy as np
    from backprop_traps.grader.checks.attention_backward.probes import MEM_B, MEM_D, MEM_N
    from backprop_traps.grader.loading.reference import load_solution
    ref = load_solution("attention_backward")
    rng = np.random.default_rng(0)
    q, k, v, do = (rng.standard_normal((MEM_B, MEM_N, MEM_D)) for _ in range(4))
    rows = []
    for causal in (False, True):
        o, lse = ref.attention_forward(q, k, v, causal)
        rows.append((f"forward, causal={causal}", median_of(runs, lambda c=causal: _seconds(
            ref.attention_forward, q, k, v, c))))
        rows.append((f"backward, causal={causal}", median_of(runs, lambda c=causal, o=o, lse=lse: _seconds(
            ref.attention_backward, do, q, k, v, o, lse, c))))
    return rows


def numba_floor(runs: int) -> float:
    """A fresh Python that only imports numba's CUDA simulator, as maxpool_kernel's child
    must: what no grading of that question in a fresh process can go under."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    return median_of(runs, lambda: timed_env([sys.executable, "-c", "from numba import cuda"], env))


def _seconds(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def full_marks(grade: str, notebook: Path) -> bool:
    """Whether the solution gets every point here: a timing of a failing grading means nothing."""
    import json
    out = subprocess.run([grade, "--json", str(notebook)], capture_output=True, text=True).stdout
    try:
        doc = json.loads(out)
    except ValueError:
        return False
    return doc.get("max_score", 0) > 0 and doc.get("score") == doc.get("max_score")


def median_of(runs, fn) -> float:
    fn()  # a warm-up run, untimed: the first after an install or a pause reads files from disk
    return statistics.median(fn() for _ in range(runs))


def child_start() -> float:
    from backprop_traps.grader.sandbox.process import Sandbox
    with Sandbox("x = 1\n") as box:
        start = time.perf_counter()
        assert box.start().ok
        return time.perf_counter() - start


def nbgrader_course(tmp: Path) -> Path:
    """A throwaway nbgrader course whose one submission is the solution notebook."""
    (tmp / "source" / "ps1").mkdir(parents=True)
    shutil.copy(SOLUTION, tmp / "source" / "ps1" / SOLUTION.name)
    (tmp / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.root = %r\nc.CourseDirectory.course_id = 'bench'\n" % str(tmp))
    subprocess.run(["nbgrader", "generate_assignment", "ps1", "--force"], cwd=tmp, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sub = tmp / "submitted" / "student1" / "ps1"
    sub.mkdir(parents=True)
    shutil.copy(SOLUTION, sub / SOLUTION.name)
    return tmp


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-nbgrader", action="store_true")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "grade_latency.md"),
                        help="where the table is written (run it with a wheel venv's Python to time "
                             "the kit as a learner installs it)")
    parser.add_argument("--baseline", metavar="DIR", help="a checkout of an earlier commit (git worktree "
                        "add DIR COMMIT): its `grade` is timed on the same solution, in the same run")
    args = parser.parse_args()
    grade = console_script() or sys.exit("`grade` is not installed: pip install -e .")
    compile_bytecode(REPO)
    if args.baseline:
        compile_bytecode(Path(args.baseline).resolve())

    load_before = os.getloadavg()
    total = median_of(args.runs, lambda: timed([grade, str(SOLUTION)], cpu_label="routing"))
    python = median_of(args.runs, lambda: timed([sys.executable, "-c", "pass"]))
    imports = median_of(args.runs, lambda: timed(
        [sys.executable, "-c", "import backprop_traps.grader.cli, backprop_traps.grader.engine.run, backprop_traps.grader.checks.routing_trap"]))
    child = median_of(args.runs, child_start)
    rows = [("`grade` total (cold process)", total),
            ("  CPU seconds of it (user + system: the grader and its sandbox)", cpu_of("routing")),
            # timed apart: inside `grade` they overlap (the child boots while the grader imports:
            # grader/entry.py), so they do not add up to the total
            ("  alone: interpreter start-up", python),
            ("  alone: imports of the grade path", imports - python),
            ("  alone: a sandbox's start (bubblewrap, cgroup, numpy, seccomp, Landlock)", child)]
    on_path = shutil.which("grade")
    if on_path and Path(on_path).resolve() != Path(grade).resolve():  # e.g. pyenv's shim, a bash script
        rows.append((f"`grade` as PATH finds it here ({on_path})",
                     median_of(args.runs, lambda: timed([on_path, str(SOLUTION)]))))
    against = ""
    if args.baseline:
        # the earlier kit's own `grade`, on this checkout's solution, run from its folder
        old = [sys.executable, "-c", "import sys; from backprop_traps.grader.cli import main; sys.argv[0] = 'grade'; main()",
               str(SOLUTION)]
        env = dict(os.environ, PYTHONPATH=str(Path(args.baseline).resolve()))
        base = median_of(args.runs, lambda: timed_env(old, env))
        rows.append((f"`grade` of the baseline ({baseline_name(args.baseline)})", base))
        # A shared machine's speed drifts within minutes: the ratio that holds is that of pairs
        # run back to back, in alternating order, 3x as many as --runs.
        pairs = []
        for i in range(3 * args.runs):
            if i % 2 == 0:
                ours = timed([grade, str(SOLUTION)])
                theirs = timed_env(old, env)
            else:
                theirs = timed_env(old, env)
                ours = timed([grade, str(SOLUTION)])
            pairs.append(ours / theirs)
        paired = statistics.median(pairs)
        rows.append((f"`grade` / the baseline, median of {len(pairs)} back-to-back pairs (ratio)", paired))
        against = (f"\nOn the same machine in the same run, `grade` takes **{paired:.2f}x** the baseline's time "
                   f"(pairs run back to back in alternating order; the two medians above give {total / base:.2f}x).\n")
    from backprop_traps.grader.loading.questions import solution_notebooks
    with tempfile.TemporaryDirectory() as work:  # a learner's folder, never the installed package's
        # a learner's folder and cache; training_symptoms' runs for the default seed come with
        # the kit (every try alike); benchmarks/grade_profile.py times another seed's first try
        os.environ["BACKPROP_TRAPS_CACHE"] = str(Path(work) / "cache")
        copies = {qid: Path(shutil.copy(path, work)) for qid, path in solution_notebooks().items()}
        unsound = [qid for qid, copy in copies.items() if not full_marks(grade, copy)]
        per_question = [(qid + (" (NOT full marks: timing meaningless)" if qid in unsound else ""),
                         median_of(args.runs, lambda p=copy, q=qid: timed([grade, str(p)], cpu_label=q)),
                         cpu_of(qid))
                        for qid, copy in copies.items()]
    ratio = ""
    if not args.no_nbgrader:
        with tempfile.TemporaryDirectory() as tmp:
            course = nbgrader_course(Path(tmp))
            nbg = median_of(args.runs, lambda: timed(
                ["nbgrader", "autograde", "ps1", "--force", "--create"], cwd=course))
        rows.append(("`nbgrader autograde` of the same notebook", nbg))
        ratio = f"\n`grade` is **{nbg / total:.1f}x** faster than `nbgrader autograde` on the same notebook.\n"

    import backprop_traps.grader as grader
    how = "an editable install (pip install -e .)" if Path(grader.__file__).resolve().is_relative_to(REPO) \
        else f"an installed wheel ({Path(grader.__file__).resolve().parent.parent})"
    machine = f"{platform.node() or 'unknown host'}: {platform.machine()}, {os.cpu_count()} cores, " \
              f"Python {platform.python_version()}, {platform.platform()}; the kit from {how}, " \
              f"`{grade}`"
    table = "\n".join([f"| step | median of {args.runs} (s) |", "|---|---|"]
                      + [f"| {name} | {secs:.3f} |" for name, secs in rows])
    from backprop_traps.grader.checks.attention_backward.probes import MEM_N
    floor = attention_floor(args.runs)
    numba = numba_floor(args.runs)
    floor_table = "\n".join([f"| call | median of {args.runs} (s) |", "|---|---|"]
                            + [f"| {name} | {secs:.3f} |" for name, secs in floor]
                            + [f"| sum of the four | {sum(secs for _, secs in floor):.3f} |"])
    load_after = os.getloadavg()
    each = "\n".join([f"| question | `grade` on a copy of its solution, median of {args.runs} (s) | CPU (s) |",
                      "|---|---|---|"]
                     + [f"| {qid} | {secs:.3f} | {cpu:.2f} |" for qid, secs, cpu in per_question])
    report = (f"# `grade` latency on the routing-trap solution\n\n"
              f"Measured {datetime.date.today()} on {machine}.\n"
              f"Command: `python benchmarks/grade_latency.py --runs {args.runs}"
              f"{' --baseline ' + args.baseline if args.baseline else ''}`.\n"
              f"Load average (1 min) before: {load_before[0]:.2f}, after: {load_after[0]:.2f} "
              f"({os.cpu_count()} cores: above that, other work stretched these wall times; the CPU "
              f"seconds, user + system of the grader and its sandbox from the grading's own profile "
              f"in 10 ms ticks, are the steadier measure).\n\n{table}\n{ratio}{against}\n"
              f"## Every question's solution (goal: 0.4 s or less)\n\n"
              f"training_symptoms' runs for the default seed come with the kit, on every try "
              f"(`grade_profile.md` has another seed's first try, which trains them).\n\n{each}\n\n"
              f"## attention_backward's floor: the solution's own compute at the memory checks' size\n\n"
              f"The four measured calls (N = {MEM_N}) run the learner's code in the sandbox; this is the\n"
              f"reference solution's time for them in one process, with no sandbox at all.\n\n{floor_table}\n\n"
              f"## maxpool_kernel's floor: importing numba's CUDA simulator\n\n"
              f"`python -c 'from numba import cuda'` (NUMBA_ENABLE_CUDASIM=1), no sandbox, median of "
              f"{args.runs}: **{numba:.3f} s**.\nThe child that runs the learner's kernels imports it "
              f"before any check can run.\n")
    print(report)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)


if __name__ == "__main__":
    main()
