"""Benchmark: training_symptoms' runs, the work of a learner's first try (issue 47).

Run: python benchmarks/training_runs.py [--pairs 5] [--seed 1234] [--baseline DIR]
Times the 16 runs the diagnosis checks read (``runs.trained``, one after the other, in a fresh
process: the CPU seconds a course pays for every submission) and a learner's first try of
them as the kit does it (``prefetch.train_all`` with an empty practice cache: the wall time a
learner waits, helpers included). With ``--baseline`` (a checkout of an earlier commit: ``git
worktree add DIR COMMIT``) the earlier training is timed too, in back-to-back pairs that
alternate which goes first, and each pair's traces are compared bit for bit. Prints a markdown
table and writes it to benchmarks/results/training_runs.md with the machine and its load.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = r"""
import hashlib, json, os, sys, tempfile, time
os.environ["BACKPROP_TRAPS_CACHE"] = tempfile.mkdtemp(prefix="bpt-bench-cache-")
import numpy as np
import backprop_traps.grader.checks.training_symptoms as question
from backprop_traps.grader.checks.training_symptoms import runs
seed, how = int(sys.argv[1]), sys.argv[2]
pairs = question.runs_read()
wall, cpu = time.perf_counter(), time.process_time()
if how == "first-try":
    from backprop_traps.grader.checks.training_symptoms import prefetch
    prefetch.train_all(seed, pairs)
    traces = [runs.trace(seed, c, i, practice=True) for c, i in pairs]
else:
    traces = [runs.trained(seed, c, i) for c, i in pairs]
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
digest = hashlib.sha256()
for t in traces:
    for key in sorted(t):
        digest.update(key.encode() + np.asarray(t[key]).tobytes())
print(json.dumps({"wall": wall, "cpu": cpu, "runs": len(pairs), "digest": digest.hexdigest()[:16]}))
"""


def run(kit: Path, seed: int, how: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(kit))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(seed), how], env=env, cwd="/",
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--baseline", metavar="DIR")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "training_runs.md"))
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows, ratios, same = [], [], True
    for i in range(args.pairs):
        order = [REPO, Path(args.baseline)] if args.baseline else [REPO]
        if i % 2:
            order.reverse()
        timed = {kit: run(kit, args.seed, "alone") for kit in order}
        first = run(REPO, args.seed, "first-try")
        rows.append((timed[REPO], first))
        if args.baseline:
            base = timed[Path(args.baseline)]
            ratios.append(timed[REPO]["cpu"] / base["cpu"])
            same = same and base["digest"] == timed[REPO]["digest"]
            rows[-1] += (base,)
    med = lambda values: statistics.median(values)  # noqa: E731
    lines = ["| what | median of %d |" % args.pairs, "|---|---|",
             f"| the {rows[0][0]['runs']} runs one after the other: CPU s (a course, every submission) "
             f"| {med(r[0]['cpu'] for r in rows):.2f} |",
             f"| the same: wall s (a learner's first try before prefetch.py) | {med(r[0]['wall'] for r in rows):.2f} |",
             f"| a learner's first try (`prefetch.train_all`, empty cache): wall s "
             f"| {med(r[1]['wall'] for r in rows):.2f} |"]
    if args.baseline:
        lines += [f"| the baseline's runs one after the other: CPU s | {med(r[2]['cpu'] for r in rows):.2f} |",
                  f"| this / the baseline, CPU, median of the {len(ratios)} back-to-back pairs | {med(ratios):.2f}x |",
                  f"| traces bit for bit the baseline's | {'yes' if same else 'NO'} |"]
    table = "\n".join(lines)
    print(table)
    machine = (f"{platform.node() or 'unknown host'}: {platform.machine()}, {os.cpu_count()} cores, "
               f"Python {platform.python_version()}, {platform.platform()}")
    command = "python benchmarks/training_runs.py" + (f" --pairs {args.pairs}" if args.pairs != 5 else "") + \
        (f" --baseline {args.baseline}" if args.baseline else "")
    Path(args.out).write_text(
        f"# training_symptoms' runs\n\nMeasured {dt.date.today()} on {machine}.\nCommand: `{command}` (seed "
        f"{args.seed}).\nLoad average (1 min) before: {load_before:.2f}, after: {os.getloadavg()[0]:.2f} "
        f"({os.cpu_count()} cores: above that, other work shared the machine).\n\n{table}\n")


if __name__ == "__main__":
    main()
