"""Benchmark: how fast `grade interview` checks a spoken answer (goal: well under a second).

Run: python benchmarks/interview_startup.py [--runs 11]
Times, in fresh processes taken in turns: `python -c pass` (the floor); importing the key
points' matcher and checking one answer in-process (the import and the first match, which
loads lemminflect's lexicon); `grade interview adamw_step --answer - --json` on the hired
answer (the whole command); and `grade next` and `grade progress` in an empty folder.
Writes benchmarks/results/interview_startup.md with the machine and its load.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL = 1.0
FIRST_MATCH = """
import time
t = time.perf_counter()
from backprop_traps.grader.authoring.interview import parse, read_notebook
from backprop_traps.grader.learner import keypoints
from backprop_traps.grader.loading.questions import solution_notebooks
it = parse(read_notebook(solution_notebooks()["adamw_step"])[0])
imported = time.perf_counter()
assert all(keypoints.hits(it.key_points, it.hired, it.question))
done = time.perf_counter()
print(imported - t, done - imported)
"""


def grade_script() -> str:
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        script = Path(folder) / "grade"
        if script.is_file():
            return str(script)
    sys.exit("`grade` is not installed beside this Python: pip install -e .")


def timed(cmd, cwd, stdin=None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                   text=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    grade = grade_script()
    sys.path.insert(0, str(REPO))
    from backprop_traps.grader.authoring.interview import parse, read_notebook
    from backprop_traps.grader.loading.questions import solution_notebooks
    hired = parse(read_notebook(solution_notebooks()["adamw_step"])[0]).hired
    walls: dict[str, list[float]] = {}
    split: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="bpt-interview-") as empty:
        runs = [("`python -c pass` (the floor)", [sys.executable, "-c", "pass"], None),
                ("import + first match, in-process", None, None),
                ("`grade interview adamw_step --answer - --json`", [grade, "interview", "adamw_step", "--answer", "-",
                                                                     "--json"], hired),
                ("`grade next` (empty folder)", [grade, "next"], None),
                ("`grade progress` (empty folder)", [grade, "progress"], None)]
        for _ in range(args.runs):
            for name, cmd, stdin in runs:
                if cmd is None:
                    start = time.perf_counter()
                    out = subprocess.run([sys.executable, "-c", FIRST_MATCH], cwd=empty, check=True,
                                         capture_output=True, text=True).stdout.split()
                    walls.setdefault(name, []).append(time.perf_counter() - start)
                    split.append((float(out[0]), float(out[1])))
                else:
                    walls.setdefault(name, []).append(timed(cmd, empty, stdin))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = ["# `grade interview` start-up", "",
             f"Measured {datetime.date.today().isoformat()} on {platform.node() or 'this machine'}: "
             f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average {load}.",
             f"Command: `python benchmarks/interview_startup.py --runs {args.runs}`; each run a fresh process, "
             "in an empty folder.", "",
             f"| what | wall, median of {args.runs} (s) | slowest (s) | under {GOAL:g} s |", "|---|---|---|---|"]
    for name, values in walls.items():
        median = statistics.median(values)
        lines.append(f"| {name} | {median:.3f} | {max(values):.3f} | {'yes' if median < GOAL else 'NO'} |")
    imports, first = statistics.median(s[0] for s in split), statistics.median(s[1] for s in split)
    lines += ["", f"In-process, median: importing the matcher and reading a notebook's key points {imports:.3f} s; "
                  f"the first match (reading the answer's clauses, loading lemminflect's lexicon, 7 key points) "
                  f"{first:.3f} s. Process start-up and Python's own imports make up the rest of the wall time."]
    text = "\n".join(lines) + "\n"
    print(text)
    out = REPO / "benchmarks" / "results" / "interview_startup.md"
    out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
