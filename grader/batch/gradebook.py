"""The class's view of a batch: the gradebook CSV, a text summary, and a chart.

Built from the result files on disk (never from memory), so a resumed batch, a Dask
batch and a clean local one give the same gradebook from the same results.

``gradebook.csv``: one row per student, sorted; a column per question (the student's best
score when they handed in several files for it; empty when none), ``total``, and
``could_not_grade`` (how many of their files had an error). ``summary.txt``: per question
the score distribution and how often each check failed (``check_rates.py``), then the traps
that caught the most students, every file that could not be graded or needs a look, and who
handed in nothing or an untouched stub for a question (``status.py``). ``summary.png`` when
matplotlib is importable. Names come from
students' files: no CSV cell starts like a spreadsheet formula, and no control character
reaches the terminal.
"""
from __future__ import annotations

import csv
import io
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from backprop_traps.grader.batch.check_rates import check_failure_rates, rate_lines
from backprop_traps.grader.batch.layouts import Job
from backprop_traps.grader.batch.status import MISSING, UNTOUCHED, class_rows
from backprop_traps.grader.batch.needs_a_look import needing_a_look
from backprop_traps.grader.batch.store import ResultStore, atomic_write


@dataclass
class Entry:
    job: Job
    result: dict
    meta: dict = field(default_factory=dict)
    """The result's sidecar (``.run.json``): whether the file was an untouched stub, when it
    was handed in."""


def collect(jobs: list[Job], store: ResultStore) -> tuple[list[Entry], list[Job]]:
    """(every result in OUTDIR, this run's jobs without one): the gradebook is always the
    whole output folder's, so regrading one student never drops the rest of the class."""
    entries = [Entry(job, result, meta) for job, result, meta in store.everything()]
    missing = [job for job in jobs if not isinstance(store.load(job)[0], dict)]
    return entries, missing


def question_columns(entries: list[Entry], known: list[str]) -> list[str]:
    """Known question ids only: a result's id may come from a student's notebook metadata."""
    seen = {e.result.get("question") for e in entries}
    return [q for q in known if q in seen]


def _fmt(x: float) -> str:
    return f"{x:g}"


def safe_cell(value) -> str:
    """A CSV cell a spreadsheet will not run as a formula (OWASP's advice: a leading
    ``= + - @``, tab or carriage return is escaped with a quote), with no control characters."""
    text = _shown(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def safe_row(values) -> list[str]:
    """Numbers as they are (a negative score is no formula); every text cell made safe."""
    return [v if isinstance(v, str) and _NUMBER.fullmatch(v) else safe_cell(v) for v in values]


_NUMBER = re.compile(r"-?\d+(\.\d+)?(e[-+]?\d+)?")


def _shown(text) -> str:
    """Text for the terminal and a spreadsheet: each character that inert text escapes
    (sandbox/inert.py: control, format, separator, unassigned, private) as '?'."""
    from backprop_traps.grader.sandbox.inert import shown_as_is
    return "".join(c if shown_as_is(c) else "?" for c in str(text))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def gradebook_csv(entries: list[Entry], known: list[str]) -> str:
    columns = question_columns(entries, known)
    best: dict[str, dict[str, float]] = defaultdict(dict)
    errors: Counter = Counter()
    for e in entries:
        student, question = e.job.student, e.result.get("question")
        best[student]  # every student gets a row, even with nothing gradable
        errors[student] += bool(e.result.get("error"))
        if question in columns:
            score = float(e.result.get("score") or 0.0)
            best[student][question] = max(score, best[student].get(question, score))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", *columns, "total", "could_not_grade"])
    for student in sorted(best):
        scores = best[student]
        writer.writerow(safe_row([student, *(_fmt(scores[q]) if q in scores else "" for q in columns),
                                  _fmt(sum(scores.values())), str(errors[student])]))
    return out.getvalue()


def distribution(scores: list[float], max_score: float) -> list[tuple[str, int]]:
    """(label, count) rows: one per score when there are few distinct scores, else ten bins."""
    distinct = sorted(set(scores))
    if len(distinct) <= 13 or max_score <= 0:
        return [(_fmt(s), scores.count(s)) for s in distinct]
    width = max_score / 10
    rows = []
    for i in range(10):
        lo, hi = i * width, (i + 1) * width
        count = sum(lo <= s < hi or (i == 9 and s == max_score) for s in scores)
        rows.append((f"{lo:.3g}-{hi:.3g}", count))
    return rows


def trap_counts(entries: list[Entry]) -> list[tuple[int, str, str]]:
    """(students caught, question, trap), most students first."""
    caught: dict[tuple[str, str], set] = defaultdict(set)
    for e in entries:
        for test in e.result.get("tests") or []:
            if isinstance(test, dict) and test.get("trap"):
                caught[(str(e.result.get("question")), str(test["trap"]))].add(e.job.student)
    return sorted(((len(s), q, t) for (q, t), s in caught.items()), key=lambda r: (-r[0], r[1], r[2]))


def summary_text(entries: list[Entry], known: list[str], missing: list[Job] = (),
                 header: str = "", roster: list[str] = ()) -> str:
    students = {e.job.student for e in entries} | {j.student for j in missing}
    failed = [e for e in entries if e.result.get("error")]
    lines = [_shown(header)] if header else []
    lines.append(f"{_count(len(entries), 'submission')} from {_count(len(students), 'student')}; "
                 f"{len(failed)} could not be graded.")
    rates = check_failure_rates(entries)
    for q in question_columns(entries, known):
        mine = [e.result for e in entries if e.result.get("question") == q]
        scores = [float(r.get("score") or 0.0) for r in mine]
        top = max(float(r.get("max_score") or 0.0) for r in mine)
        lines += ["", f"{q} (out of {_fmt(top)}): {_count(len(scores), 'submission')}, mean {statistics.mean(scores):.3g}, "
                      f"median {_fmt(statistics.median(scores))}, min {_fmt(min(scores))}, max {_fmt(max(scores))}",
                  f"  {'score':>9}  submissions"]
        peak = max(c for _, c in distribution(scores, top)) or 1
        for label, count in distribution(scores, top):
            lines.append(f"  {label:>9}  {'#' * round(30 * count / peak):<30} {count}")
        lines += rate_lines(rates, q)
    traps = trap_counts(entries)
    lines += ["", "Traps that caught the most students:" if traps else "No known trap caught anyone."]
    lines += [f"  {_count(n, 'student'):>12}  {q}  {t}" for n, q, t in traps[:15]]
    looks = needing_a_look(entries)
    if looks:
        lines += ["", f"Needs a look ({len(looks)}: these scores say little about the answer):"]
        lines += [f"  {look.student}  {look.file}: {look.reason}: {look.detail[:200]}" for look in looks]
    lines += _handed_in_nothing(entries, known, roster)
    if missing:
        lines += ["", f"No result yet ({len(missing)}; run the batch again to grade them):"]
        lines += [_shown(f"  {j.rel}") for j in missing]
    return "\n".join(_shown(line) for line in lines) + "\n"


def _handed_in_nothing(entries: list[Entry], known: list[str], roster: list[str]) -> list[str]:
    """Who handed in nothing, or only the untouched stub, for a question the class answered."""
    rows = class_rows([(e.job, e.result, e.meta) for e in entries], question_columns(entries, known), roster)
    absent = [(r.student, q) for r in rows for q, c in r.cells.items() if c.status == MISSING]
    stubs = [(r.student, q) for r in rows for q, c in r.cells.items() if c.status == UNTOUCHED]
    lines = []
    for title, pairs in (("Missing: nothing handed in for the question", absent),
                         ("Untouched stubs: the question's stub handed in as released", stubs)):
        if pairs:
            lines += ["", f"{title} ({len(pairs)}):"]
            lines += [f"  {student}  {q}" for student, q in pairs]
    return lines


def write_chart(path: Path, entries: list[Entry], known: list[str]) -> bool:
    """Score histograms per question and the top traps, on a grid of at most three panels a
    row; scores on a numeric axis (a 2 and a 10 are not neighbours). False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return False
    columns = question_columns(entries, known)
    traps = trap_counts(entries)[:10]
    rates = [r for r in check_failure_rates(entries) if r.failed][:12]
    panels = len(columns) + (1 if traps else 0) + (1 if rates else 0)
    if panels == 0:
        return False
    across = min(3, panels)
    rows = -(-panels // across)
    fig, axes = plt.subplots(rows, across, figsize=(4.6 * across, 3.6 * rows), squeeze=False)
    flat = list(axes.flat)
    for ax, q in zip(flat, columns):
        mine = [e.result for e in entries if e.result.get("question") == q]
        scores = [float(r.get("score") or 0.0) for r in mine]
        top = max(float(r.get("max_score") or 0.0) for r in mine) or max(scores + [1.0])
        counts = Counter(scores)
        ax.bar(list(counts), list(counts.values()), width=max(top / 40, 0.15), color="#4c72b0")
        ax.set_xlim(-top * 0.05, top * 1.05)
        ax.set_title(f"{q} (out of {_fmt(top)})", fontsize=10)
        ax.set_xlabel("score")
        ax.set_ylabel("submissions")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
    if traps:
        ax = flat[len(columns)]
        ax.barh([f"{q}: {t}" for _, q, t in reversed(traps)], [n for n, _, _ in reversed(traps)],
                color="#dd8452")
        ax.set_title("traps: students caught", fontsize=10)
        ax.tick_params(axis="y", labelsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if rates:
        ax = flat[len(columns) + (1 if traps else 0)]
        ax.barh([f"{r.question}: {r.check[:40]}" for r in reversed(rates)],
                [100 * r.share for r in reversed(rates)], color="#c44e52")
        ax.set_title("checks failed most often (% of graded)", fontsize=10)
        ax.set_xlim(0, 100)
        ax.tick_params(axis="y", labelsize=7)
    for ax in flat[panels:]:
        ax.set_visible(False)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    tmp.replace(path)
    return True


def write_all(outdir: Path, jobs: list[Job], store: ResultStore, known: list[str],
              header: str = "", chart: bool = True, roster: list[str] = ()) -> dict[str, Path | str]:
    """Write gradebook.csv, summary.txt (and summary.png); returns the paths and the summary."""
    entries, missing = collect(jobs, store)
    outdir = Path(outdir)
    written: dict[str, Path | str] = {"gradebook": outdir / "gradebook.csv", "summary": outdir / "summary.txt"}
    atomic_write(written["gradebook"], gradebook_csv(entries, known))
    text = summary_text(entries, known, missing, header, roster)
    atomic_write(written["summary"], text)
    written["text"] = text
    if chart and entries and write_chart(outdir / "summary.png", entries, known):
        written["chart"] = outdir / "summary.png"
    return written
