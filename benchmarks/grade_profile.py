"""Benchmark: where one `grade FILE` spends its time, boundary by boundary (issue 47).

Run: python benchmarks/grade_profile.py [--runs 5] [--questions routing_trap maxpool_kernel
     training_symptoms] [--cprofile]
Each run is a fresh `grade` process on a copy of the question's solution, in a scratch folder,
with BACKPROP_TRAPS_PROFILE pointing at a file (grader/timeline.py): every boundary
(the interpreter and click, the engine's imports, the sandbox's launch, the child's boot, the
learner's load, each check, the report) is timed in wall seconds and in CPU seconds (user +
system) of the grader and of the sandbox's processes. CPU seconds say what a step costs
whatever else the machine runs; wall seconds say what a learner waits for on this machine now,
so the load average is recorded beside them. training_symptoms is timed with the default seed
(its runs shipped with the kit: shipped.py), and with another seed (``--seed 7``) on a learner's
first try (its runs trained) and on the tries after it (read from the practice cache).
``--cprofile`` adds, for each question, the functions with the most CPU time in one grading in
this process (cProfile with a CPU clock). Writes benchmarks/results/grade_profile.md.
"""
from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from grade_latency import compile_bytecode, console_script  # noqa: E402

DEFAULT = ("routing_trap", "maxpool_kernel", "training_symptoms")
TRAPS = ("routing_trap/lost_overlap", "grad_accumulation/half_precision_accumulator")
"""Wrong answers (tests/answers/<question>/<name>.py over the solution): what a failing check
adds, the smallest failing input's search and the upstream replay included."""


def profiled_runs(grade: str, notebook: Path, runs: int, env: dict, extra: tuple = ()) -> list[dict]:
    """``runs`` gradings of ``notebook`` (``grade --json NOTEBOOK *extra``), each in a fresh
    process: their profiles."""
    out = []
    with tempfile.TemporaryDirectory() as work:
        copy = Path(shutil.copy(notebook, work))
        log = Path(work) / "profile.jsonl"
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run([grade, "--json", str(copy), *extra], cwd=work, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env={**env, "BACKPROP_TRAPS_PROFILE": str(log)})
            elapsed = time.perf_counter() - start
            doc = json.loads(log.read_text().splitlines()[-1])
            doc["total"]["outside"] = elapsed
            out.append(doc)
    return out


def table(profiles: list[dict]) -> str:
    """Median per step over the runs (steps matched by name and order of first appearance)."""
    names: list[str] = []
    by_step: dict[str, list[dict]] = {}
    for doc in profiles:
        seen: dict[str, int] = {}
        for step in doc["steps"]:
            n = seen[step["step"]] = seen.get(step["step"], 0) + 1
            key = step["step"] if n == 1 else f"{step['step']} ({n})"
            if key not in by_step:
                names.append(key)
            by_step.setdefault(key, []).append(step)
    med = statistics.median
    lines = ["| step | wall (s) | grader CPU (s) | sandbox CPU (s) |", "|---|---|---|---|"]
    for name in names:
        rows = by_step[name]
        lines.append(f"| {name} | {med(r['wall'] for r in rows):.3f} | {med(r['grader_cpu'] for r in rows):.3f} "
                     f"| {med(r['sandbox_cpu'] for r in rows):.3f} |")
    spans: dict[str, list[float]] = {}
    for doc in profiles:
        for span in doc.get("parallel", []):
            spans.setdefault(span["span"], []).append(span["wall"])
    for name, values in spans.items():
        lines.append(f"| *in parallel:* {name} | {med(values):.3f} | | |")
    totals = [d["total"] for d in profiles]
    lines.append(f"| **whole process** (timed outside it) | **{med(t['outside'] for t in totals):.3f}** "
                 f"| **{med(t['grader_cpu'] for t in totals):.3f}** | **{med(t['sandbox_cpu_seen'] for t in totals):.3f}** |")
    return "\n".join(lines)


def cpu_profile(question: str, lines: int = 15) -> str:
    """The functions with the most CPU time (cumulative) in one grading in this process."""
    from backprop_traps.grader.engine.run import grade_path
    from backprop_traps.grader.loading.questions import solution_notebooks
    with tempfile.TemporaryDirectory() as work:
        copy = Path(shutil.copy(solution_notebooks()[question], work))
        grade_path(copy, practice=False)  # warm: imports, the reference
        profile = cProfile.Profile(time.process_time)
        profile.runcall(grade_path, copy, practice=False)
    text = io.StringIO()
    pstats.Stats(profile, stream=text).strip_dirs().sort_stats("cumulative").print_stats(lines)
    body = text.getvalue().split("\n\n", 2)[-1].strip()
    return f"```\n{body}\n```"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--questions", nargs="+", default=list(DEFAULT))
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--traps", nargs="*", default=list(TRAPS), metavar="QUESTION/ANSWER")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "grade_profile.md"))
    args = parser.parse_args()
    grade = console_script() or sys.exit("`grade` is not installed: pip install -e .")
    compile_bytecode(REPO)
    from backprop_traps.grader.loading.questions import solution_notebooks
    notebooks = solution_notebooks()
    load_before = os.getloadavg()
    sections = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "BACKPROP_TRAPS_CACHE": cache}
        for qid in args.questions:
            if qid == "training_symptoms":
                profiled_runs(grade, notebooks[qid], 1, env)  # warm-up: files read from disk once
                sections.append((f"{qid}, the default seed (its runs shipped with the kit)",
                                 table(profiled_runs(grade, notebooks[qid], args.runs, env))))
                other = ("--seed", "7")
                first = profiled_runs(grade, notebooks[qid], 1, env, other)
                shutil.rmtree(cache, ignore_errors=True)
                os.makedirs(cache)
                profiled_runs(grade, notebooks[qid], 1, env, other)  # fills the cache for the runs below
                sections.append((f"{qid}, `--seed 7`: a learner's first try (its runs trained; one run)",
                                 table(first)))
                sections.append((f"{qid}, `--seed 7`: the tries after it (runs from the practice cache)",
                                 table(profiled_runs(grade, notebooks[qid], args.runs, env, other))))
            else:
                profiled_runs(grade, notebooks[qid], 1, env)  # warm-up: files read from disk once
                sections.append((qid, table(profiled_runs(grade, notebooks[qid], args.runs, env))))
            if args.cprofile:
                sections.append((f"{qid}: CPU profile of one grading in process (cProfile, CPU clock)",
                                 cpu_profile(qid)))
        for trap in args.traps:
            question, name = trap.split("/")
            with tempfile.TemporaryDirectory() as work:
                from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
                answer = Path(work) / f"{name}.py"
                answer.write_text(f"# question: {question}\n"
                                  + graded_code(parse_notebook(notebooks[question].read_text(encoding="utf-8")))
                                  + "\n\n" + (REPO / "tests" / "answers" / question / f"{name}.py").read_text())
                profiled_runs(grade, answer, 1, env)
                sections.append((f"{question}, a wrong answer ({name}): failing checks and their feedback",
                                 table(profiled_runs(grade, answer, args.runs, env))))
    load_after = os.getloadavg()
    machine = (f"{platform.node() or 'unknown host'}: {platform.machine()}, {os.cpu_count()} cores, "
               f"Python {platform.python_version()}, {platform.platform()}")
    text = [f"# Where one `grade FILE` spends its time\n",
            f"Measured {datetime.date.today()} on {machine}.",
            f"Command: `python benchmarks/grade_profile.py --runs {args.runs}"
            + (" --cprofile" if args.cprofile else "") + "`; medians of that many fresh `grade --json` processes "
            "on a copy of each solution, bytecode compiled.",
            f"Load average (1 min) before: {load_before[0]:.2f}, after: {load_after[0]:.2f} "
            f"({os.cpu_count()} cores: above that, other work shared the machine and stretched the wall times; "
            "CPU seconds are the steady measure).\n",
            "Rows are the boundaries of grader/timeline.py in order; *in parallel* rows are the "
            "child's boot, which runs while the grader loads the question (its times come from the child's "
            "own clock stamps). CPU seconds are counted in clock ticks (10 ms).\n"]
    for title, body in sections:
        text += [f"## {title}\n", body, ""]
    Path(args.out).write_text("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
