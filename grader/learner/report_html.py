"""The report made for a notebook (issue 38, item 2): HTML that JupyterLab shows under the
"Grade it" cell, with the terminal report (``report.render``) as its plain-text fallback.

What changes from the terminal: PASS and FAIL in colour; prose wrapped by the browser (never
hard-wrapped, never a word cut in two), examples kept in their layout; cells named as
JupyterLab numbers them (``[4]``, the execution count), not by their place in the file; no
path outside the notebook's folder (the kit's files are offered as
``grade_this_notebook(solution=True)``); and the commands a terminal would need given as the
notebook's own calls (``grade_this_notebook(hint=True)``). Every text is escaped, by construction:
markup is made only by ``tag``, from the grader's literal templates, and every value it fills in
is escaped unless it is markup ``tag`` made (markupsafe; tests/redteam/test_redteam_surfaces.py).
"""
from __future__ import annotations

import re

from markupsafe import Markup

from backprop_traps.grader.engine.results import GradeResult
from backprop_traps.grader.learner.report import (STALE_SCORE, counts_text, failing_checks, once, points_text,
                                                  replay_text)
from backprop_traps.grader.sandbox.inert import inert

GREEN, RED, MAGENTA, AMBER, GREY = "#1a7f37", "#cf222e", "#8250df", "#9a6700", "#6e7781"
_BOX = ("font-family: var(--jp-code-font-family, monospace); font-size: 13px; line-height: 1.45; "
        "max-width: 100%; overflow-wrap: anywhere;")
_CELL = re.compile(r"\bcell (\d+)\b")


def tag(template: str, *values) -> Markup:
    """The one way markup is made here (issue 43, class 2): ``template`` is the grader's own
    literal, and every value filled into it is escaped (markupsafe's ``Markup.format``) unless it
    is already ``Markup`` built by this same function. No text reaches the report any other way."""
    return Markup(template).format(*values)


def _join(parts) -> Markup:
    return Markup("").join(parts)  # escapes whatever is not Markup already


def _badge(text: str, colour: str) -> Markup:
    return tag('<span style="display:inline-block; min-width:3.2em; text-align:center; color:#fff; '
               'background:{}; border-radius:3px; padding:0 4px; font-weight:bold">{}</span>', colour, text)


def _esc(text: str, cells: dict) -> Markup:
    """Learner-facing text, inert and escaped, with "cell 8" written as JupyterLab shows it
    ("cell [4]"); a label (it may quote the cell's first line) is escaped as well."""
    text = inert(text, keep_newlines=True)
    pieces, last = [], 0
    for m in _CELL.finditer(text):
        pieces += [text[last:m.start()], tag("cell {}", inert(cells.get(int(m.group(1)), m.group(1)), 80))]
        last = m.end()
    return _join(pieces + [text[last:]])


def _feedback(text: str, cells: dict) -> Markup:
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
            out.append(_pre(block, cells))
            block = []
        out.append(tag('<div style="white-space:normal">{}</div>', _esc(line, cells)))
    if block:
        out.append(_pre(block, cells))
    return _join(out)


_PRE = "margin:2px 0; white-space:pre-wrap; word-break:normal; overflow-wrap:break-word; max-width:100%"


def _pre(lines: list[str], cells: dict) -> Markup:
    return tag('<pre style="{}">{}</pre>', _PRE, _esc("\n".join(lines), cells))


def render_html(result: GradeResult, shown_name: str, cells: dict | None = None,
                stale: str = "", follow_up: str = "") -> Markup:
    """The report of ``result`` as HTML. ``shown_name``: the notebook as its folder names it;
    ``cells``: {place in the file (1-based): "[4]"}; ``stale``: the sentence that leads when the
    saved file is not what the kernel ran; ``follow_up``: what comes after (hint, next steps)."""
    cells = cells or {}
    parts = [tag('<div class="backprop-traps-report" style="{}">', _BOX)]
    if stale:
        parts.append(tag('<div style="border:2px solid {}; color:{}; padding:6px 8px; margin-bottom:6px; '
                         'font-weight:bold; white-space:normal">{}</div>', RED, RED, inert(stale)))
    parts.append(tag('<div style="font-weight:bold">{} · {}</div>',
                     _esc(result.question or "?", cells), _esc(shown_name, cells)))
    if result.error and result.internal_error:  # the grader's fault: no score, not even a 0
        parts.append(tag('<div style="color:{}">The grader failed: {}</div>', MAGENTA, _esc(result.error, cells)))
        parts.append(tag("<div>Score: none (not graded; out of {:g} points)</div></div>", result.max_score))
        return _join(parts)
    if result.error:
        parts.append(tag('<div style="color:{}">Could not grade: {}</div>', RED, _esc(result.error, cells)))
        parts.append(tag("<div>Score: 0 / {:g} points</div></div>", result.max_score))
        return _join(parts)
    if result.warnings:
        items = _join(tag("<li>{}</li>", _esc(w, cells)) for w in result.warnings)
        parts.append(tag('<div style="color:{}">Warnings (every cell ran in order, going on past '
                         'errors, as nbgrader does):</div><ul style="margin:2px 0 6px 1.2em; padding:0">{}</ul>',
                         AMBER, items))
    if stale:  # what follows is the saved file's, not what the learner sees above
        parts.append(tag('<div style="color:{}">The checks of the saved file (not what this kernel ran), '
                         "in grey: they give no score.</div>", GREY))
    parts.append(tag('<table style="border-collapse:collapse; width:100%; table-layout:auto">'))
    shown: set[str] = set()
    for t in result.tests:
        badge = (_badge("BUG", MAGENTA) if t.grader_error else
                 _badge("PASS", GREY if stale else GREEN) if t.passed else _badge("FAIL", GREY if stale else RED))
        trap = (tag(' <span style="color:{}; white-space:nowrap">[trap: {}]</span>', AMBER, _esc(t.trap, cells))
                if t.trap else "")
        parts.append(tag('<tr style="vertical-align:top"><td style="padding:1px 6px 1px 0">{}</td>'
                         '<td style="padding:1px 6px; text-align:right; white-space:nowrap">{:g}/{:g}</td>'
                         '<td style="padding:1px 0; text-align:left">{}{}</td></tr>',
                         badge, t.points, t.max_points, _esc(t.name, cells), trap))
        if not t.passed and t.feedback:
            parts.append(tag('<tr><td></td><td></td><td style="padding:0 0 6px 0; text-align:left">{}</td></tr>',
                             _feedback(once(t.feedback, shown), cells)))
    parts.append(tag("</table>"))
    public = result.public
    what = "Visible tests of the saved file" if stale else "Visible tests"
    if public is not None and public.error:
        parts.append(tag("<div>{} (not scored): could not run ({}).</div>", what, _esc(public.error, cells)))
    elif public is not None and (public.failures or stale):
        # stale: never "3 of 3 pass" unqualified, under a test cell that failed in the kernel
        items = _join(tag('<li><span style="color:{}">x</span> {}</li>', RED, _esc(f, cells))
                      for f in public.failures)
        parts.append(tag("<div>{} (not scored{}): {} of {} pass{}</div>", what,
                         ", not what ran above" if stale else "", public.passed, public.total,
                         "; failing:" if public.failures else "."))
        if public.failures:
            parts.append(tag('<ul style="margin:2px 0 6px 1.2em; padding:0; list-style:none">{}</ul>', items))
    if result.manual:
        parts.append(tag("<div>Not auto-graded (never in the score): {}.</div>", _esc(", ".join(result.manual), cells)))
    if stale:
        parts.append(tag('<div style="margin-top:4px; color:{}">{}</div>', RED, STALE_SCORE))
    else:
        colour = GREEN if result.score >= result.max_score else RED if result.score == 0 else "inherit"
        parts.append(tag('<div style="margin-top:4px">Score: <b style="color:{}">{}</b> ({}; {})</div>',
                         colour, points_text(result), counts_text(result), inert(replay_text(result))))
    passed = sum(t.passed for t in result.tests)
    if public is not None and public.passed == public.total and passed < len(result.tests):
        parts.append(tag('<div style="color:{}">Every visible test passes, but {}: the visible tests only '
                         "check the basics.</div>", AMBER, failing_checks(len(result.tests) - passed)))
    if any(t.grader_error for t in result.tests):
        parts.append(tag('<div style="color:{}">A check broke inside the grader (BUG above): not your '
                         "answer's fault; the score may be too low. Please report it.</div>", MAGENTA))
    if follow_up:
        parts.append(tag('<div style="margin-top:6px">{}</div>', _feedback(follow_up, cells)))
    parts.append(tag("</div>"))
    return _join(parts)


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
