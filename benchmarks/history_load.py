"""Benchmark: `grade next` and `grade progress` on the largest history the kit reads.

Run: python benchmarks/history_load.py [--runs 5]
Prints a markdown table (median of cold runs, each a fresh `grade` process) and writes it to
benchmarks/results/history_load.md with the machine and its load average. The histories:
none; the issue's 3.8 MB one (90,000 dated interviews over six questions, no review cards:
before the schema every one was replayed into fsrs); and the worst within the schema's caps
(grader/loading/persisted.py: every question, interview, card and mock summary it keeps, with
the rest of the 4 MB filled by records it cuts before reading).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HISTORY = ".backprop_traps_history.json"
QUESTIONS = ["routing_trap", "per_step_update_trap", "vram_trap", "softmax_ce", "bptt", "layernorm_backward"]


def issue_history() -> dict:
    runs = lambda: [{"date": f"20{10 + i % 15:02d}-0{1 + i % 9}-1{i % 10}", "hit": i % 5, "of": 5}  # noqa: E731
                    for i in range(15000)]
    return {"version": 1, "questions": {q: {"best": 5.0, "last": 5.0, "max_score": 10.0, "attempts": 3,
                                            "interviews": runs()} for q in QUESTIONS}}


def capped_history() -> dict:
    from backprop_traps.grader.loading import persisted as p
    card = {"card_id": 1, "state": 2, "step": None, "stability": 3.5, "difficulty": 5.0,
            "due": "2026-12-01T10:00:00+00:00", "last_review": "2026-11-20T10:00:00+00:00"}
    entry = {"card": card, "before": card, "day": "2026-11-20", "first": 3, "rating": 3, "why": "x" * 100,
             "hints": 0, "reviews": 3}
    ids = QUESTIONS + [f"q{n}" for n in range(p.MAX_QUESTIONS - len(QUESTIONS))]
    runs = [{"date": "2026-11-20", "hit": 3, "of": 5}] * p.MAX_INTERVIEWS
    mock = {"date": "2026-11-20", "question": "bptt", "minutes": 45, "elapsed_s": 100, "timed_out": False,
            "spoken": {"hit": 1, "of": 5}, "code": {"score": 1, "max_score": 10}, "missed": ["m" * 20] * 20}
    doc = {"version": 1, "questions": {q: {"best": 5.0, "max_score": 10.0, "interviews": runs} for q in ids},
           "review": {"version": 1, "cards": {f"{q}:{k}": entry for q in ids for k in ("code", "spoken")}},
           "mocks": [mock] * p.MAX_MOCKS}
    filler = [{"date": "2026-11-20", "hit": 1, "of": 5}]
    while len(json.dumps(doc)) < 3_900_000:  # records past the caps: cut before they are read
        doc["questions"][ids[0]]["interviews"] = filler * 10_000 + doc["questions"][ids[0]]["interviews"]
    return doc


def timed(cmd, cwd) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run: on a busy machine the CPU time
    is the figure that says what the command costs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    grade = str(Path(sys.executable).with_name("grade"))
    histories = {"none": None, "the issue's 3.8 MB": issue_history(), "worst within the caps": capped_history()}
    rows = []
    for name, doc in histories.items():
        with tempfile.TemporaryDirectory() as here:
            size = 0
            if doc is not None:
                text = json.dumps(doc)
                size = len(text)
            for command in ("next", "progress"):
                times = []
                for _ in range(args.runs):
                    if doc is not None:  # fresh each run: a run that saves would change it
                        Path(here, HISTORY).write_text(text, encoding="utf-8")
                    times.append(timed([grade, command], here))
                rows.append((name, f"{size / 1e6:.1f} MB", f"grade {command}",
                             statistics.median(w for w, _ in times), statistics.median(c for _, c in times)))
    load = os.getloadavg()
    lines = [f"# History load: {dt.date.today().isoformat()}", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
             f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; median of {args.runs} cold runs.", "",
             "| history | size | command | median wall s | median CPU s |", "|---|---|---|---|---|"]
    lines += [f"| {h} | {s} | `{c}` | {t:.2f} | {cpu:.2f} |" for h, s, c, t, cpu in rows]
    table = "\n".join(lines) + "\n"
    print(table)
    out = REPO / "benchmarks" / "results" / "history_load.md"
    out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
