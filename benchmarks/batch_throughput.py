"""Benchmark: `grade batch` throughput on a generated class of 200 submissions.

Run: python benchmarks/batch_throughput.py [--count 200] [--jobs 1 2] [--dask]
     [--questions ID ...] [--baseline DIR]  (DIR: a checkout of an earlier commit, timed on
     the same class in the same run, e.g. the kit before the bubblewrap sandbox)
The class mixes correct answers, trap answers (tests/answers/<question>/*.py) and broken
ones (the stub notebook, a syntax error, an empty file) across every question that has
hidden checks, one student folder each, graded with a course secret and the default
limits. Each run is a fresh `python -m backprop_traps.grader.batch` process into an empty folder; the
table (submissions per second, speed-up over -j 1, core-seconds per submission) is
printed and written to benchmarks/results/batch_throughput.md with the machine and its
load average, since other work on a shared machine slows every run.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from backprop_traps.grader.loading.notebook import graded_code, parse_notebook  # noqa: E402
from backprop_traps.grader.loading.questions import exercise_path, solution_notebooks  # noqa: E402


def questions_with_checks() -> list[str]:
    """Every shipped question: the checks registry says where each one's checks are (a module
    or a package). A question without checks is an error here, never silently dropped: the
    benchmark once measured 6 of 20 questions after 14 became packages."""
    from backprop_traps.grader.checks import checks_source
    questions = list(solution_notebooks(REPO))
    without = [q for q in questions if checks_source(q) is None]
    if without:
        raise SystemExit(f"no hidden checks found for {', '.join(without)}: the benchmark covers every question")
    return questions


def chosen_questions(only=None) -> list[str]:
    """The questions a run covers: all of them, or ``--questions`` (each must exist)."""
    every = questions_with_checks()
    if not only:
        return every
    unknown = sorted(set(only) - set(every))
    if unknown:
        raise SystemExit(f"unknown question ids: {', '.join(unknown)}")
    return [q for q in every if q in only]


def make_class(root: Path, count: int, only=None) -> dict[str, int]:
    """``count`` submissions, round-robin over the questions: 40 % correct, 40 % traps
    (where the question has trap answers, else correct), 20 % broken."""
    questions = chosen_questions(only)
    kinds = {"correct": 0, "trap": 0, "broken": 0}
    for i in range(count):
        q = questions[i % len(questions)]
        solution = graded_code(parse_notebook(solution_notebooks(REPO)[q].read_text(encoding="utf-8")))
        traps = sorted((REPO / "tests" / "answers" / q).glob("*.py"))
        traps = [t for t in traps if "torch" not in t.name]  # torch is a test-only oracle
        folder = root / f"student{i:03d}"
        folder.mkdir(parents=True)
        slot = (i // len(questions)) % 5
        if slot in (0, 1) or (slot in (2, 3) and not traps):
            kind, body = "correct", solution
        elif slot in (2, 3):
            kind, body = "trap", solution + "\n" + traps[(i // 5) % len(traps)].read_text()
        else:
            kind = "broken"
            which = (i // 5) % 3
            if which == 0:
                shutil.copy(exercise_path(q, REPO), folder / exercise_path(q, REPO).name)
            else:
                (folder / "answer.py").write_text(f"# question: {q}\n" + ("def broken(:\n" if which == 1 else ""))
            kinds[kind] += 1
            continue
        kinds[kind] += 1
        (folder / "answer.py").write_text(f"# question: {q}\n{body}")
    return kinds


CPU_SECONDS: dict = {}
"""out folder -> CPU seconds (user + system) the batch spent: the runner's, each grading
process's and their sandboxes', from each process's profile (grader/timeline.py)."""


def timed_batch(source: Path, out: Path, extra: list[str], kit: Path = REPO) -> float:
    cmd = [sys.executable, "-m", "backprop_traps.grader.batch", str(source), "-o", str(out), "--secret", "bench-secret", *extra]
    log = out.parent / f"{out.name}.profile.jsonl"
    env = {**os.environ, "PYTHONPATH": str(kit), "BACKPROP_TRAPS_PROFILE": str(log)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if log.exists():  # each process's own CPU (the runner's, each grading process's) and its sandboxes'
        totals = [json.loads(line)["total"] for line in log.read_text().splitlines()]
        CPU_SECONDS[str(out)] = sum(t["grader_cpu"] + t["sandbox_cpu_seen"] for t in totals)
    else:  # an earlier kit without the profile: what the kernel counted of its reaped processes
        CPU_SECONDS[str(out)] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        CPU_SECONDS[str(out) + " partial"] = True
    return elapsed


def dask_batch(source: Path, out: Path, workers: int) -> float:
    from distributed import LocalCluster
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        return timed_batch(source, out, ["--scheduler", cluster.scheduler_address])


def mean_seconds(out: Path) -> float:
    """Mean grading time of one submission, as its grading process saw it."""
    times = [json.loads(p.read_text())["seconds"] for p in (out / "results").glob("*.run.json")]
    return sum(times) / max(len(times), 1)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--dask", action="store_true", help="also run on a local Dask cluster")
    parser.add_argument("--questions", nargs="+", default=None, help="only these questions")
    parser.add_argument("--baseline", metavar="DIR", help="also time an earlier checkout on the same class")
    args = parser.parse_args()

    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "class"
        kinds = make_class(source, args.count, args.questions)
        print(f"covering {len(chosen_questions(args.questions))} questions: {', '.join(chosen_questions(args.questions))}",
              file=sys.stderr)
        for jobs in args.jobs:
            out = Path(tmp) / f"out-j{jobs}"
            rows.append((f"`-j {jobs}`", jobs, timed_batch(source, out, ["-j", str(jobs)]), mean_seconds(out),
                         CPU_SECONDS[str(out)], str(out) + " partial" in CPU_SECONDS))
            if args.baseline:
                out = Path(tmp) / f"base-j{jobs}"
                rows.append((f"`-j {jobs}`, baseline {Path(args.baseline).name}", jobs,
                             timed_batch(source, out, ["-j", str(jobs)], Path(args.baseline).resolve()),
                             mean_seconds(out), CPU_SECONDS[str(out)], str(out) + " partial" in CPU_SECONDS))
        if args.dask:
            workers = max(args.jobs)
            out = Path(tmp) / "out-dask"
            rows.append((f"Dask, {workers} local workers x 1 thread", workers, dask_batch(source, out, workers),
                         mean_seconds(out), CPU_SECONDS[str(out)], str(out) + " partial" in CPU_SECONDS))
    load_after = os.getloadavg()

    base = rows[0][2]
    table = ["| run | wall (s) | submissions/s | speed-up vs first row | core-s per submission | "
             "CPU s per submission (measured) | mean grading time per submission (s) |",
             "|---|---|---|---|---|---|---|"]
    for name, cores, wall, per, cpu, partial in rows:
        table.append(f"| {name} | {wall:.1f} | {args.count / wall:.2f} | {base / wall:.2f}x | "
                     f"{cores * wall / args.count:.2f} | {cpu / args.count:.3f}"
                     f"{' (its processes only: no profile)' if partial else ''} | {per:.2f} |")
    machine = (f"{platform.node() or 'unknown host'}: {cpu_model()}, {os.cpu_count()} cores, "
               f"Python {platform.python_version()}, {platform.platform()}")
    covered = chosen_questions(args.questions)
    questions = (f"all {len(covered)} questions" if not args.questions else
                 f"{len(covered)} of {len(questions_with_checks())} questions") + f" ({', '.join(covered)})"
    report = (f"# `grade batch` throughput\n\n"
              f"Measured {datetime.date.today()} on {machine}.\n"
              f"Command: `python benchmarks/batch_throughput.py --count {args.count} --jobs "
              f"{' '.join(map(str, args.jobs))}{' --dask' if args.dask else ''}"
              f"{' --questions ' + ' '.join(args.questions) if args.questions else ''}"
              f"{' --baseline ' + args.baseline if args.baseline else ''}`.\n"
              f"Class: {args.count} submissions ({kinds['correct']} correct, {kinds['trap']} trap answers, "
              f"{kinds['broken']} broken) over {questions}; default limits, a course secret.\n"
              f"Load average (1 min) before: {load_before[0]:.2f}, after: {load_after[0]:.2f} "
              f"(above the core count means other work shared the machine and slowed these runs).\n"
              f"core-s per submission is cores x wall / count (what the run occupied); CPU s per "
              f"submission is what it spent (user + system of the runner, the grading processes and "
              f"their sandboxes, from each process's profile, in 10 ms ticks): the steadier number "
              f"on a shared machine.\n\n"
              + "\n".join(table) + "\n")
    print(report)
    out = REPO / "benchmarks" / "results" / "batch_throughput.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)


if __name__ == "__main__":
    main()
