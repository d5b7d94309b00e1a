"""Benchmark: no right answer loses a point on any draw.

Course and batch gradings draw fresh hidden inputs every run (a seed and a secret draw), so a
check that is right on the usual seed can still cost a right answer points on an unlucky draw
(a finite difference straddling a ReLU kink, a near-tie in a max). This grades every shipped
solution over many draws, as an instructor's replay (`--replay`: nothing is recorded), and
fails (exit 1) on any point lost, naming the draw that replays it.

Run: python benchmarks/draw_stability.py [--draws 12] [--jobs 2] [--only ID ...]
Writes benchmarks/results/draw_stability.md (per question: draws, full marks, the worst
score, the replay command of each draw that lost a point) with the machine it ran on.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "draw_stability.md"


def grade_cmd() -> list[str]:
    """This Python's `grade` console script (not a shim on PATH)."""
    beside = Path(sys.executable).with_name("grade")
    return [str(beside)] if beside.exists() else [shutil.which("grade") or "grade"]


def one_draw(solution: Path, seed: int, draw: str, workdir: str) -> dict:
    cmd = grade_cmd() + [str(solution), "--json", "--replay", "--seed", str(seed), "--draw", draw]
    run = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=600)
    try:
        doc = json.loads(run.stdout)
    except ValueError:
        doc = {"score": None, "max_score": None, "error": (run.stderr or run.stdout)[-300:]}
    doc.update(seed=seed, draw=draw, solution=solution.name)
    return doc


def draws_for(count: int, rng: random.Random) -> list[tuple[int, str]]:
    return [(rng.randrange(1, 10 ** 6), "%032x" % rng.getrandbits(128)) for _ in range(count)]


def table(results: dict[str, list[dict]], machine: str) -> str:
    lines = ["# Draw stability: every shipped solution over many draws", "",
             f"Recorded {datetime.date.today()} on {machine}, by `python benchmarks/draw_stability.py`.",
             "A row's draws are graded as an instructor's replay; any point lost fails the run.", "",
             "| question | draws | full marks | worst score | lost a point on |", "|---|---|---|---|---|"]
    for name, docs in sorted(results.items()):
        full = [d for d in docs if d["score"] is not None and d["score"] == d["max_score"]]
        scores = [d["score"] for d in docs if d["score"] is not None]
        worst = f"{min(scores):g} / {docs[0]['max_score']:g}" if scores else "no score"
        lost = "; ".join(f"`--seed {d['seed']} --draw {d['draw']}`" for d in docs if d not in full) or "none"
        lines.append(f"| {name} | {len(docs)} | {len(full)} | {worst} | {lost} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=12, help="draws per solution")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rng-seed", type=int, default=20261202, help="which draws (replayable)")
    parser.add_argument("--only", nargs="*", default=None, help="question ids (default: all)")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args(argv)
    solutions = sorted((REPO / "solutions").glob("[0-9][0-9]_*.ipynb"))
    if args.only:
        solutions = [s for s in solutions if s.stem.split("_", 1)[1] in args.only]
    rng = random.Random(args.rng_seed)
    jobs = [(s, seed, draw) for s in solutions for seed, draw in draws_for(args.draws, rng)]
    with tempfile.TemporaryDirectory() as work, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        docs = list(pool.map(lambda job: one_draw(*job, work), jobs))
    results: dict[str, list[dict]] = {}
    for doc in docs:
        results.setdefault(doc["solution"].removesuffix(".ipynb"), []).append(doc)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    machine = f"{platform.node() or 'this machine'}, {os.cpu_count()} cores, load average {load:.1f}"
    text = table(results, machine)
    print(text)
    if not args.no_write and not args.only:
        RESULTS.write_text(text)
    lost = [d for d in docs if d["score"] is None or d["score"] != d["max_score"]]
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
