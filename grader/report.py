"""The terminal report: one line per check, feedback under failures, the total last."""
from __future__ import annotations

import click

from grader.results import GradeResult


def _fmt_points(x: float) -> str:
    return f"{x:g}"


def render(result: GradeResult, color: bool) -> str:
    """The human-readable report of one result (ANSI colours only when ``color``)."""
    style = (lambda text, **kw: click.style(text, **kw)) if color else (lambda text, **kw: text)
    lines = [style(f"{result.question or '?'}  ·  {result.submission}", bold=True)]
    if result.error:
        lines.append(style(f"  Could not grade: {result.error}", fg="red"))
        lines.append(f"  Score: 0 / {_fmt_points(result.max_score)}")
        return "\n".join(lines)
    width = max((len(t.name) for t in result.tests), default=0)
    for t in result.tests:
        mark = style("PASS", fg="green") if t.passed else style("FAIL", fg="red")
        pts = f"{_fmt_points(t.points)}/{_fmt_points(t.max_points)}"
        trap = style(f"  [trap: {t.trap}]", fg="yellow") if t.trap else ""
        lines.append(f"  {mark} {pts:>7}  {t.name.ljust(width)}{trap}")
        if not t.passed and t.feedback:
            for fb in t.feedback.splitlines():
                lines.append(f"                 {fb}")
    passed = sum(t.passed for t in result.tests)
    total = style(f"{_fmt_points(result.score)} / {_fmt_points(result.max_score)}", bold=True)
    lines.append(f"  Score: {total}   (hidden checks passed: {passed}/{len(result.tests)}, "
                 f"seed {result.seed}: --seed {result.seed} replays this run)")
    if result.isolation.startswith("none"):
        lines.append(style("  Note: this platform offers no filesystem isolation (Landlock); your code "
                           "ran with limits but could read files.", fg="yellow"))
    return "\n".join(lines)
