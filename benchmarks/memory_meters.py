"""Benchmark: the practice meter against the cgroup meter, on every memory question's answers.

Run: python benchmarks/memory_meters.py [QUESTION ...]
Grades each question that measures memory (its solution and every answer in
tests/answers/<id>/) twice: with this machine's cgroup (the tamper-proof meter; needs a
writable cgroup) and with cgroups switched off in practice mode (``BACKPROP_TRAPS_NO_CGROUP=1``:
the practice meter, grader/sandbox/practice_meter.py). Each grading runs in a fresh Python.
Prints a markdown table (score and every measured call's peak in MiB, per meter) and writes it
to benchmarks/results/memory_meters.md: the practice meter must give the same verdicts.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys
from backprop_traps.grader.authoring import corpus
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.engine.run import grade_path
from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
from backprop_traps.grader.loading.questions import questions_root, solution_path
from backprop_traps.grader.sandbox.process import Sandbox

real, peaks = Sandbox.call, []
def call(self, fn, *args, measure_memory=False, **how):
    result = real(self, fn, *args, measure_memory=measure_memory, **how)
    if measure_memory:
        peak = (result.memory or {}).get("peak")
        peaks.append(None if peak is None else round(peak / 2 ** 20, 2))
    return result
Sandbox.call = call
q, root = sys.argv[1], questions_root(None)
base = graded_code(parse_notebook(solution_path(q, root).read_text()))
rows = []
peaks.clear()
r = grade_path(solution_path(q, root), practice=True)
rows.append(["solution", r.score, r.max_score, list(peaks), r.memory])
for answer in corpus.answers(root, q, [t.id for t in load_question(q, root).traps]):
    peaks.clear()
    r = corpus.grade_answer(answer, q, root, 1234, base)
    rows.append([answer.path.name, r.score, r.max_score, list(peaks), r.memory])
print("ROWS" + json.dumps(rows))
"""


def grade_all(question: str, practice: bool) -> list:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("BACKPROP_TRAPS_SECRET", None)
    if practice:
        env["BACKPROP_TRAPS_NO_CGROUP"] = "1"
    done = subprocess.run([sys.executable, "-c", CHILD, question], capture_output=True, text=True,
                          env=env, cwd=REPO)
    line = [x for x in done.stdout.splitlines() if x.startswith("ROWS")]
    if not line:
        raise SystemExit(f"{question}: {done.stderr[-2000:]}")
    return json.loads(line[0][4:])


def main() -> None:
    from backprop_traps.grader.checks import load_question
    from backprop_traps.grader.loading.questions import solution_notebooks
    from backprop_traps.grader.sandbox import cgroup
    questions = sys.argv[1:] or [q for q in solution_notebooks() if load_question(q).memory_paths]
    version, where = cgroup.available()
    lines = [f"# Memory meters: practice against cgroup ({datetime.date.today()})", "",
             f"Machine: {platform.node() or 'this machine'}, Linux {platform.release()}, {os.cpu_count()} CPUs; "
             f"cgroup: {where}.", "",
             "| question | answer | cgroup: score, peaks (MiB) | practice meter: score, peaks (MiB) | same verdict |",
             "|---|---|---|---|---|"]
    worst = 0.0
    for question in questions:
        trusted = grade_all(question, practice=False) if version else []
        practice = grade_all(question, practice=True)
        for i, (name, score, top, peaks, _) in enumerate(practice):
            t = trusted[i] if trusted else None
            shown = f"{t[1]:g}/{t[2]:g}, {t[3]}" if t else "no cgroup here"
            same = "" if t is None else ("yes" if t[1] == score else "**no**")
            if t and len(t[3]) == len(peaks):
                worst = max([worst] + [abs(a - b) for a, b in zip(t[3], peaks) if a is not None and b is not None])
            lines.append(f"| {question} | {name} | {shown} | {score:g}/{top:g}, {peaks} | {same} |")
    lines += ["", f"Largest difference between the two meters on one call: {worst:.2f} MiB."]
    text = "\n".join(lines) + "\n"
    print(text)
    (REPO / "benchmarks" / "results" / "memory_meters.md").write_text(text)


if __name__ == "__main__":
    main()
