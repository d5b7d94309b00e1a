"""Benchmark: how fast `grade` answers the commands a learner types first (goal: under 0.2 s).

Run: python benchmarks/cli_startup.py [--runs 15]
Times `grade --help`, `grade --version` and `grade list` (in an empty folder, so no history)
and `python -c pass` for the floor, taken in turns so that each meets the same load. Each run
is a fresh process of the `grade` console script installed beside this Python (not a version
manager's shim, which adds its own start-up).
Prints a markdown table and writes it to benchmarks/results/cli_startup.md with the machine
it ran on and its load: per command the median wall time of the runs, the slowest, and the
median CPU time (user + system) the process used, which other work on a busy machine
inflates much less than the wall time.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL = 0.2


def grade_script() -> str:
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        script = Path(folder) / "grade"
        if script.is_file():
            return str(script)
    sys.exit("`grade` is not installed beside this Python: pip install -e .")


def timed(cmd, cwd) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    grade = grade_script()
    env_note = " (BACKPROP_TRAPS_QUESTIONS is set: `grade list` reads that folder)" \
        if os.environ.get("BACKPROP_TRAPS_QUESTIONS") else ""
    commands = [("`python -c pass` (the floor)", [sys.executable, "-c", "pass"]),
                ("`grade --help`", [grade, "--help"]),
                ("`grade --version`", [grade, "--version"]),
                ("`grade list`", [grade, "list"])]
    runs = {name: [] for name, _ in commands}
    with tempfile.TemporaryDirectory(prefix="bpt-startup-") as empty:
        for _, cmd in commands:
            timed(cmd, empty)  # warm the file cache: a learner's second command, not a cold disk
        for _ in range(args.runs):  # round-robin, so that every command meets the same load
            for name, cmd in commands:
                runs[name].append(timed(cmd, empty))
    rows = []
    for name, _ in commands:
        walls, cpus = [w for w, _ in runs[name]], [c for _, c in runs[name]]
        rows.append((name, statistics.median(walls), max(walls), statistics.median(cpus)))

    machine = f"{platform.node() or 'unknown host'}: {platform.machine()}, {os.cpu_count()} cores, " \
              f"Python {platform.python_version()}, {platform.platform()}"
    table = "\n".join([f"| command | wall, median of {args.runs} (s) | wall, slowest (s) | CPU, median (s) "
                       f"| median under {GOAL} s |", "|---|---|---|---|---|"]
                      + [f"| {name} | {med:.3f} | {worst:.3f} | {cpu:.3f} | "
                         f"{'' if 'floor' in name else ('yes' if med < GOAL else 'NO')} |"
                         for name, med, worst, cpu in rows])
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    if os.nice(0):  # e.g. `nice -n -10` to keep other jobs on a shared machine from interfering
        load += f", run at niceness {os.nice(0)}"
    report = (f"# `grade` start-up\n\n"
              f"Measured {datetime.date.today()} on {machine}{env_note}; load average {load}.\n"
              f"Command: `python benchmarks/cli_startup.py --runs {args.runs}`; each run is a fresh "
              f"process of `{Path(grade).name}` from {Path(grade).parent}, in an empty folder.\n\n{table}\n\n"
              "Wall time is what a learner waits; on a busy machine it includes waiting for a core, so "
              "compare the CPU column (what the command itself costs) with the floor: the rest of "
              "`python -c pass` is this environment's start-up (its .pth files), not `grade`'s.\n")
    print(report)
    out = REPO / "benchmarks" / "results" / "cli_startup.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)


if __name__ == "__main__":
    main()
