"""The report made for a notebook (issue 38, item 2): HTML that JupyterLab shows under the
"Grade it" cell, with the terminal report (``report.render``) as its plain-text fallback.

What changes from the terminal: PASS and FAIL in colour; prose wrapped by the browser (never
hard-wrapped, never a word cut in two), examples kept in their layout; cells named as
JupyterLab numbers them (``[4]``, the execution count), not by their place in the file; no
path outside the notebook's folder (the kit's files are offered as
``grade_this_notebook(solution=True)``); and the commands a terminal would need given as the
notebook's own calls (``grade_this_notebook(hint=True)``). Every text is escaped.
"""
from __future__ import annotations

import html
import re

from backprop_traps.grader.engine.results import GradeResult
from backprop_traps.grader.learner.report import (STALE_SCORE, counts_text, failing_checks, once, points_text,
                                                  replay_text)
from backprop_traps.grader.sandbox.inert import inert

GREEN, RED, MAGENTA, AMBER, GREY = "#1a7f37", "#cf222e", "#8250df", "#9a6700", "#6e7781"
_BOX = ("font-family: var(--jp-code-font-family, monospace); font-size: 13px; line-height: 1.45; "
        "max-width: 100%; overflow-wrap: anywhere;")
_CELL = re.compile(r"\bcell (\d+)\b")


def _badge(text: str, colour: str) -> str:
    return (f'<span style="display:inline-block; min-width:3.2em; text-align:center; color:#fff; '
            f'background:{colour}; border-radius:3px; padding:0 4px; font-weight:bold">{text}</span>')


def _esc(text: str, cells: dict) -> str:
    """Escaped learner-facing text, with "cell 8" written as JupyterLab shows it ("cell [4]")."""
    text = html.escape(inert(text, keep_newlines=True))
    return _CELL.sub(lambda m: f"cell {cells.get(int(m.group(1)), m.group(1))}", text)


def _feedback(text: str, cells: dict) -> str:
    """Prose lines as paragraphs the browser wraps; indented lines (examples, the list of the
    reference's files) in a <pre> that keeps their layout and wraps what is wider than the output
    area (issue 51, item 9: a ``white-space:pre`` line was cut mid-word at 1280 px, with no
    scrollbar JupyterLab would show), breaking inside a word only where nothing else fits."""
    out, block = [], []
    for line in text.splitlines():
        if line[:1].isspace():
            block.append(line)
            continue
        if block:
            out.append(f'<pre style="{_PRE}">{_esc(chr(10).join(block), cells)}</pre>')
            block = []
        out.append(f'<div style="white-space:normal">{_esc(line, cells)}</div>')
    if block:
        out.append(f'<pre style="{_PRE}">{_esc(chr(10).join(block), cells)}</pre>')
    return "".join(out)


_PRE = "margin:2px 0; white-space:pre-wrap; word-break:normal; overflow-wrap:break-word; max-width:100%"


def render_html(result: GradeResult, shown_name: str, cells: dict | None = None,
                stale: str = "", follow_up: str = "") -> str:
    """The report of ``result`` as HTML. ``shown_name``: the notebook as its folder names it;
    ``cells``: {place in the file (1-based): "[4]"}; ``stale``: the sentence that leads when the
    saved file is not what the kernel ran; ``follow_up``: what comes after (hint, next steps)."""
    cells = cells or {}
    parts = [f'<div class="backprop-traps-report" style="{_BOX}">']
    if stale:
        parts.append(f'<div style="border:2px solid {RED}; color:{RED}; padding:6px 8px; margin-bottom:6px; '
                     f'font-weight:bold; white-space:normal">{html.escape(stale)}</div>')
    parts.append(f'<div style="font-weight:bold">{_esc(result.question or "?", cells)} · '
                 f'{_esc(shown_name, cells)}</div>')
    if result.error and result.internal_error:  # the grader's fault: no score, not even a 0
        parts.append(f'<div style="color:{MAGENTA}">The grader failed: {_esc(result.error, cells)}</div>')
        parts.append(f"<div>Score: none (not graded; out of {result.max_score:g} points)</div></div>")
        return "".join(parts)
    if result.error:
        parts.append(f'<div style="color:{RED}">Could not grade: {_esc(result.error, cells)}</div>')
        parts.append(f"<div>Score: 0 / {result.max_score:g} points</div></div>")
        return "".join(parts)
    if result.warnings:
        items = "".join(f"<li>{_esc(w, cells)}</li>" for w in result.warnings)
        parts.append(f'<div style="color:{AMBER}">Warnings (every cell ran in order, going on past '
                     f'errors, as nbgrader does):</div><ul style="margin:2px 0 6px 1.2em; padding:0">{items}</ul>')
    if stale:  # what follows is the saved file's, not what the learner sees above
        parts.append(f'<div style="color:{GREY}">The checks of the saved file (not what this kernel ran), '
                     "in grey: they give no score.</div>")
    parts.append('<table style="border-collapse:collapse; width:100%; table-layout:auto">')
    shown: set[str] = set()
    for t in result.tests:
        badge = (_badge("BUG", MAGENTA) if t.grader_error else
                 _badge("PASS", GREY if stale else GREEN) if t.passed else _badge("FAIL", GREY if stale else RED))
        trap = (f' <span style="color:{AMBER}; white-space:nowrap">[trap: {_esc(t.trap, cells)}]</span>'
                if t.trap else "")
        parts.append(f'<tr style="vertical-align:top"><td style="padding:1px 6px 1px 0">{badge}</td>'
                     f'<td style="padding:1px 6px; text-align:right; white-space:nowrap">{t.points:g}/{t.max_points:g}</td>'
                     f'<td style="padding:1px 0; text-align:left">{_esc(t.name, cells)}{trap}</td></tr>')
        if not t.passed and t.feedback:
            parts.append('<tr><td></td><td></td><td style="padding:0 0 6px 0; text-align:left">'
                         f'{_feedback(once(t.feedback, shown), cells)}</td></tr>')
    parts.append("</table>")
    public = result.public
    what = "Visible tests of the saved file" if stale else "Visible tests"
    if public is not None and public.error:
        parts.append(f"<div>{what} (not scored): could not run ({_esc(public.error, cells)}).</div>")
    elif public is not None and (public.failures or stale):
        # stale: never "3 of 3 pass" unqualified, under a test cell that failed in the kernel
        items = "".join(f'<li><span style="color:{RED}">x</span> {_esc(f, cells)}</li>' for f in public.failures)
        parts.append(f"<div>{what} (not scored{', not what ran above' if stale else ''}): {public.passed} of "
                     f"{public.total} pass{'; failing:' if public.failures else '.'}</div>"
                     + (f'<ul style="margin:2px 0 6px 1.2em; padding:0; list-style:none">{items}</ul>' if items else ""))
    if result.manual:
        parts.append(f"<div>Not auto-graded (never in the score): {_esc(', '.join(result.manual), cells)}.</div>")
    if stale:
        parts.append(f'<div style="margin-top:4px; color:{RED}">{html.escape(STALE_SCORE)}</div>')
    else:
        colour = GREEN if result.score >= result.max_score else RED if result.score == 0 else "inherit"
        parts.append(f'<div style="margin-top:4px">Score: <b style="color:{colour}">{html.escape(points_text(result))}'
                     f"</b> ({html.escape(counts_text(result))}; {html.escape(replay_text(result))})</div>")
    passed = sum(t.passed for t in result.tests)
    if public is not None and public.passed == public.total and passed < len(result.tests):
        parts.append(f'<div style="color:{AMBER}">Every visible test passes, but '
                     f"{failing_checks(len(result.tests) - passed)}: the visible tests only check the basics.</div>")
    if any(t.grader_error for t in result.tests):
        parts.append(f'<div style="color:{MAGENTA}">A check broke inside the grader (BUG above): not your '
                     "answer's fault; the score may be too low. Please report it.</div>")
    if follow_up:
        parts.append(f'<div style="margin-top:6px">{_feedback(follow_up, cells)}</div>')
    parts.append("</div>")
    return "".join(parts)


def notebook_follow_up(text: str, submission: str, question: str | None) -> str:
    """The terminal's follow-up (hints offered, where the reference is) in the notebook's own
    terms: the calls of the grade cell instead of commands, and no path outside the folder."""
    text = re.sub(r"`grade [^`]*--hint`", "`grade_this_notebook(hint=True)`", text)
    if question:
        text = text.replace(f"(`grade start {question} --solution` copies it and the kernels",
                            "(`grade_this_notebook(solution=True)` copies the solution notebook and its kernels")
        text = text.replace(f"`grade start {question} --solution`", "`grade_this_notebook(solution=True)`")
    names = None
    if question:
        from backprop_traps.grader.learner.next_steps import copy_names
        try:
            names = copy_names(question)
        except KeyError:  # not one of the kit's questions: no copy to name
            names = None
    lines = []
    for line in text.splitlines():
        found = re.match(r"(\s+)(the solution notebook|its Numba CUDA kernels):", line)
        if found:  # the kit's own files: named as the copy that comes here, never by their path
            if names is not None:
                copy = names[0] if found.group(2) == "the solution notebook" else names[1]
                lines.append(f"{found.group(0)} {copy} (here once copied)")
            continue
        lines.append(re.sub(r"(, then every answer on one page: )\S+", r"\1docs/interview.md", line))
    return "\n".join(lines)
