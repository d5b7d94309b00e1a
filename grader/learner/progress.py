"""The learner's progress in one folder (``grade progress``): a table, and a picture of it.

Per question: the best code score (full marks or not), the attempts and hints it took, the
interview checklist scores over time, and when each of its two review cards is due. The
picture (``plot``, matplotlib, imported only there) draws the interview scores over time and
the best code scores.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Row:
    """One question's line of the table."""
    number: str
    question: str
    best: tuple[float, float] | None
    attempts: int
    hints: int
    interviews: list = field(default_factory=list)
    """``(date, hit, of)``, oldest first."""
    due: dict = field(default_factory=dict)
    """``{"code": "due in 3 days", "spoken": "new"}``."""

    @property
    def full_marks(self) -> bool:
        return bool(self.best) and self.best[1] > 0 and self.best[0] >= self.best[1]


def rows(history, notebooks: dict[str, Path]) -> list[Row]:
    """The table's rows, in question order."""
    from backprop_traps.grader.learner.review import KINDS, Review, hints_seen
    schedule = Review(history)
    found = []
    for qid, notebook in notebooks.items():
        entry = history.questions.get(qid, {})
        runs = [(r["date"], r["hit"], r["of"]) for r in history.interviews(qid)]
        due = {kind: schedule.due_of(qid, kind).when(schedule.moment) for kind in KINDS}
        found.append(Row(notebook.name[:2], qid, history.best(qid), entry.get("attempts", 0),
                         hints_seen(history, qid), runs, due))
    return found


def _scores(runs: list, shown: int = 4) -> str:
    if not runs:
        return "-"
    text = " > ".join(f"{hit}/{of}" for _, hit, of in runs[-shown:])
    return ("... > " if len(runs) > shown else "") + text


def table(found: list[Row], mocks: list[dict]) -> str:
    """The plain table, with a headline and the mock interviews under it."""
    done = sum(r.full_marks for r in found)
    rehearsed = sum(len(r.interviews) for r in found)
    head = (f"{done}/{len(found)} questions at full marks; {rehearsed} interview"
            f"{'s' * (rehearsed != 1)} rehearsed; {len(mocks)} mock interview{'s' * (len(mocks) != 1)}.")
    header = ("", "question", "code (best)", "attempts", "hints", "interview scores, oldest first",
              "code card", "spoken card")
    lines = [(r.number, r.question,
              "-" if not r.best else f"{r.best[0]:g}/{r.best[1]:g}" + (" full" if r.full_marks else ""),
              str(r.attempts), str(r.hints), _scores(r.interviews), r.due["code"], r.due["spoken"])
             for r in found]
    widths = [max(len(row[i]) for row in lines + [header]) for i in range(len(header))]
    out = [head, ""] + ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
                        for row in [header] + lines]
    if mocks:
        out += ["", "Mock interviews:"]
        for m in mocks[-5:]:
            code = m.get("code") or {}
            code_text = f"code {code['score']:g}/{code['max_score']:g}" if code else "no code graded"
            spoken = m.get("spoken") or {}
            out.append(f"  {m.get('date', '?')}  {m.get('question', '?')}: spoken {spoken.get('hit', 0)}/"
                       f"{spoken.get('of', 0)}, {code_text}, {int(m.get('elapsed_s', 0)) // 60} min"
                       + (" (time ran out)" if m.get("timed_out") else ""))
    return "\n".join(out)


def plot(found: list[Row], path: Path) -> None:
    """Write ``figure(found)`` as a PNG."""
    import matplotlib.pyplot as plt
    fig = figure(found)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def spread_over_the_day(runs: list) -> list[tuple[dt.datetime, float]]:
    """``(when, share of key points)`` per rehearsal: the runs of one day spread evenly across
    it (the history keeps dates only), so that each attempt is its own point."""
    days: dict[dt.date, list[float]] = {}
    for date, hit, of in runs:
        try:
            day = dt.date.fromisoformat(date[:10])
        except ValueError:
            continue
        days.setdefault(day, []).append(hit / of if of else 0.0)
    points = []
    for day, shares in sorted(days.items()):
        start = dt.datetime.combine(day, dt.time())
        points += [(start + dt.timedelta(days=(k + 1) / (len(shares) + 1)), y) for k, y in enumerate(shares)]
    return points


def figure(found: list[Row]):
    """The picture: the interview scores over time (one line per question, a marker per
    attempt, the axis spanning the data's days), and the best code score per question (a bar
    per question; a score of 0 is a red stub marked 0, a question never graded says so)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    fig, (spoken, code) = plt.subplots(2, 1, figsize=(10, 8), constrained_layout=True)
    drawn, when = 0, []
    markers = "osD^v<>ph*"
    for r in found:
        points = spread_over_the_day(r.interviews)
        if points:
            xs, ys = zip(*points)
            spoken.plot(xs, [100 * y for y in ys], marker=markers[drawn % len(markers)], label=r.question)
            drawn += 1
            when += xs
    spoken.set_title("Interview checklist over time (each point one rehearsal)")
    spoken.set_ylabel("key points said (%)")
    spoken.set_ylim(-5, 105)
    if drawn:
        first = dt.datetime.combine(min(when).date(), dt.time())
        last = dt.datetime.combine(max(when).date(), dt.time()) + dt.timedelta(days=1)
        spoken.set_xlim(first, last)  # the data's days, never the years matplotlib's default spans
        if (last - first).days <= 14:  # a tick per day at its middle, a grid line between days
            spoken.xaxis.set_major_locator(mdates.HourLocator(byhour=[12]))
            spoken.xaxis.set_major_formatter(mdates.DateFormatter("%b %d"))
            spoken.xaxis.set_minor_locator(mdates.DayLocator())
            spoken.grid(axis="x", which="minor", alpha=0.4)
            spoken.tick_params(axis="x", which="major", length=0)
        else:
            locator = mdates.AutoDateLocator(minticks=2, maxticks=8)
            spoken.xaxis.set_major_locator(locator)
            spoken.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        spoken.set_xlabel("day (a day's rehearsals in order across it)")
        spoken.legend(fontsize="small", ncol=2)
    else:
        spoken.text(0.5, 0.5, "no interview rehearsed yet", ha="center", va="center",
                    transform=spoken.transAxes)
    names = [r.question for r in found]
    shares = [100 * r.best[0] / r.best[1] if r.best and r.best[1] else 0.0 for r in found]
    shown = [max(share, 1.5) if r.best else 0.0 for r, share in zip(found, shares)]  # 0 points: a stub
    colours = ["tab:green" if r.full_marks else "tab:red" if r.best and share == 0 else "tab:orange"
               for r, share in zip(found, shares)]
    code.bar(range(len(found)), shown, color=colours)
    for i, r in enumerate(found):
        if r.best:
            code.text(i, shown[i] + 1, f"{r.best[0]:g}/{r.best[1]:g}", ha="center", va="bottom",
                      fontsize="x-small", rotation=90)
        else:
            code.text(i, 1, "not started", ha="center", va="bottom", fontsize="x-small", rotation=90,
                      color="grey")
    code.set_xticks(range(len(found)), names, rotation=60, ha="right", fontsize="small")
    code.set_ylabel("best code score (%)")
    code.set_ylim(0, 118)
    code.set_title(f"Code: {sum(r.full_marks for r in found)}/{len(found)} at full marks "
                   f"(green: full marks, orange: partly, red: 0 points)")
    return fig
