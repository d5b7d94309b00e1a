"""The terminal report: one line per check, feedback under failures, the total last.

The summary counts the notebook's visible tests apart from the hidden checks: the visible
ones are quick sanity checks, so "all visible tests pass" must never read as "done".
"""
from __future__ import annotations

import re
import textwrap

import click

from backprop_traps.grader.engine.results import GradeResult
from backprop_traps.grader.sandbox.inert import inert

INDENT = " " * 17
WIDTH = 88  # prose feedback is wrapped to this many columns after the indent


def _fmt_points(x: float) -> str:
    return f"{x:g}"


def _styler(color: bool):
    return (lambda text, **kw: click.style(text, **kw)) if color else (lambda text, **kw: text)


STALE_SCORE = ("Score: none: these are the checks of the saved file, which is not what this kernel ran "
               "(see the first line). Save, run the cells, and grade again for a score.")
"""The score line of a notebook whose saved file differs from what its kernel ran (issue 51)."""


def render(result: GradeResult, color: bool, stale: bool = False) -> str:
    """The human-readable report of one result (ANSI colours only when ``color``). ``stale``:
    the notebook's saved file is not what its kernel ran; its checks are shown, no score."""
    style = _styler(color)
    lines = [style(f"{inert(result.question or '?', 80)}  ·  {inert(result.submission)}", bold=True)]
    if result.error:
        if result.internal_error:  # the grader's fault: no score, not even a 0
            lines.append(style(f"  The grader failed: {inert(result.error)}", fg="magenta"))
            lines.append(f"  Score: none (not graded; out of {_fmt_points(result.max_score)} points)")
            return "\n".join(lines)
        lines.append(style(f"  Could not grade: {inert(result.error)}", fg="red"))
        lines.append(f"  Score: 0 / {_fmt_points(result.max_score)} points")
        return "\n".join(lines)
    lines += _warning_lines(result, style)
    width = max((len(inert(t.name, 200)) for t in result.tests), default=0)
    shown: set[str] = set()  # long sentences already printed: a paragraph repeated across checks is printed once
    for t in result.tests:
        mark = style("PASS", fg="green") if t.passed else style("FAIL", fg="red")
        if stale:  # the saved file's, not what the learner sees: no colour of a verdict
            mark = "PASS" if t.passed else "FAIL"
        if t.grader_error:  # the grader's fault, and it must look like it
            mark = style("BUG ", fg="magenta", bold=True)
        pts = f"{_fmt_points(t.points)}/{_fmt_points(t.max_points)}"
        trap = style(f"  [trap: {inert(t.trap, 80)}]", fg="yellow") if t.trap else ""
        lines.append(f"  {mark} {pts:>7}  {inert(t.name, 200).ljust(width)}{trap}".rstrip())
        if not t.passed and t.feedback:
            # learner text was made inert where it left the sandbox; this is the last guard
            for fb in once(inert(t.feedback, keep_newlines=True), shown).splitlines():
                if fb[:1].isspace() or len(fb) <= WIDTH:  # examples keep their layout
                    lines.append(unforgeable(f"{INDENT}{fb}"))
                else:
                    lines += map(unforgeable, textwrap.wrap(fb, WIDTH + len(INDENT), initial_indent=INDENT,
                                                            subsequent_indent=INDENT, break_on_hyphens=False))
    lines += _visible_lines(result, style, stale)
    if result.manual:
        lines.append(f"  Not auto-graded (never in the score): {inert(', '.join(result.manual))}; "
                     f"`grade reveal {inert(result.question or 'ID')}` shows the reference step by step.")
    passed = sum(t.passed for t in result.tests)
    if stale:
        lines.append(f"  {STALE_SCORE}")
    else:
        lines.append(f"  Score: {style(points_text(result), bold=True)}   ({counts_text(result)}; {replay_text(result)})")
    if result.public is not None and result.public.passed == result.public.total and passed < len(result.tests):
        lines.append(style(f"  Every visible test passes, but {failing_checks(len(result.tests) - passed)}: "
                           "the visible tests only check the basics.", fg="yellow"))
    broken = sum(t.grader_error for t in result.tests)
    if broken:
        lines.append(style(f"  {broken} {'check' if broken == 1 else 'checks'} broke inside the grader (BUG above): "
                           "not your answer's fault;\n"
                           "  the score above may be too low. Please report it.", fg="magenta"))
    if not (result.isolation.startswith("bubblewrap") or "landlock-abi" in result.isolation):
        lines.append(style("  Note: this platform offers no filesystem isolation (bubblewrap or Landlock); "
                           "your code ran with limits but could read files.", fg="yellow"))
    lines += _memory_lines(result, style)
    return "\n".join(lines)


def _memory_lines(result: GradeResult, style) -> list[str]:
    """How memory was measured, where it was not by a tamper-proof meter (issue 39), and the
    one command that gives grading a cgroup of its own, where systemd can."""
    from backprop_traps.grader.sandbox.measure import PRACTICE
    if not result.memory or result.memory.endswith(": tamper-proof"):  # a cgroup measured it
        return []
    if result.memory == PRACTICE:
        lines = [style("  Memory: measured by the practice meter, not tamper-proof: its points count for your own "
                       "practice; a course gives memory points only with a tamper-proof meter (a cgroup).",
                       fg="yellow")]
    else:
        lines = [style(f"  Memory: {inert(result.memory, 300)}.", fg="yellow")]
    from backprop_traps.grader.sandbox import systemd_scope
    if systemd_scope.user_manager_running():
        lines.append(style("  For a tamper-proof memory meter here, grade in a delegated cgroup of your own: "
                           f"`{inert(systemd_scope.command(result.submission), 300)}`", fg="yellow"))
    return lines


def replay_text(result: GradeResult) -> str:
    """How this run is replayed. A course's report carries its opaque token and never the seed
    (a student may read it: batch/replay_token.py); practice shows the seed that replays it."""
    if result.token:
        return f"replay token {inert(result.token, 400)}: your instructor can replay this run"
    if result.seed is None:
        return "a course's run: its seed is the instructor's"
    if result.draw:
        return (f"seed {result.seed}, draw {inert(result.draw, 40)}: --seed {result.seed} "
                f"--draw {inert(result.draw, 40)} replays this run")
    return f"seed {result.seed}: --seed {result.seed} replays this run"


def failing_checks(count: int) -> str:
    """"1 hidden check fails", "2 hidden checks fail": the number said in good grammar."""
    return f"{count} hidden check fails" if count == 1 else f"{count} hidden checks fail"


def points_text(result: GradeResult) -> str:
    """"9 / 12 points": the score, in points (never mixed with numbers of checks)."""
    return f"{_fmt_points(result.score)} / {_fmt_points(result.max_score)} points"


def counts_text(result: GradeResult) -> str:
    """"hidden checks: 6 of 8 pass, visible tests: 2 of 3 pass": numbers of checks, said as such."""
    passed = sum(t.passed for t in result.tests)
    text = f"hidden checks: {passed} of {len(result.tests)} pass"
    if result.public is not None and not result.public.error:
        text += f", visible tests: {result.public.passed} of {result.public.total} pass"
    return text


def once(feedback: str, shown: set[str]) -> str:
    """``feedback`` without the long sentences an earlier check's feedback already printed (noted
    "as above", once per run of dropped text); its first sentence (what is wrong in this check)
    and examples (indented lines, and the line that introduces them) are kept whole. A parenthesis is never cut in two. ``shown``
    gathers what is printed."""
    lines: list[str] = []
    marked = False  # the last thing printed is the "as above" note
    all_lines = feedback.splitlines()
    for number, line in enumerate(all_lines):
        introduces = number + 1 < len(all_lines) and all_lines[number + 1][:1].isspace()
        if line[:1].isspace() or introduces:  # an example, and the line that introduces it
            lines.append(line)
            marked = False
            continue
        kept = []
        for place, sentence in enumerate(sentences(line)):
            if number == place == 0:  # the head says what is wrong in this check: always shown
                shown.add(sentence)
                kept.append(sentence)
                continue
            if len(sentence) >= REPEAT_CHARS and sentence in shown:
                if not marked:
                    kept.append(AS_ABOVE)
                    marked = True
                continue
            shown.add(sentence)
            kept.append(sentence)
            marked = False
        if kept:
            lines.append(" ".join(kept))
    return "\n".join(lines)


AS_ABOVE = "(The rest as above.)"


def sentences(line: str) -> list[str]:
    """``line`` cut into sentences at a full stop, question or exclamation mark followed by a
    space and a capital, a backquote or a parenthesis, never inside parentheses or backquotes."""
    from backprop_traps.grader.engine.sentences import SENTENCE_END as _SENTENCE_END
    out, start = [], 0
    for match in _SENTENCE_END.finditer(line):
        head = line[start:match.start()]
        if head.count("(") <= head.count(")") and head.count("`") % 2 == 0:
            out.append(head)
            start = match.end()
    out.append(line[start:])
    return [s for s in out if s]


REPEAT_CHARS = 40
"""A sentence this long or longer, printed by an earlier check, is not printed again."""


_MARK = re.compile(r"(\s*)((?:(?:PASS|FAIL|BUG)\b|Score:).*)$")


def unforgeable(line: str) -> str:
    """A line of learner-derived text that cannot pass for one of the report's own: where it
    would begin with a check's mark or the score (a quoted exception wrapped just so), it is
    marked as a continuation ("… PASS 2/2 ..." is text, not a check)."""
    found = _MARK.match(line)
    return f"{found.group(1)}… {found.group(2)}" if found else line


def _warning_lines(result: GradeResult, style) -> list[str]:
    """The cells that raised while loading, once each, above the checks."""
    if not result.warnings:
        return []
    lines = [style("  Warnings (every cell ran in order, going on past errors, as nbgrader does):",
                   fg="yellow")]
    for warning in result.warnings:
        lines += map(unforgeable, textwrap.wrap(inert(warning), WIDTH + len(INDENT), initial_indent=INDENT[:-2] + "! ",
                                                subsequent_indent=INDENT, break_on_hyphens=False))
    return lines


def _visible_lines(result: GradeResult, style, stale: bool = False) -> list[str]:
    """The notebook's own visible tests (not scored): only the ones that fail are listed."""
    public = result.public
    if public is None:
        return []
    what = "Visible tests of the saved file" if stale else "Visible tests"
    if public.error:
        return [f"  {what} (not scored): could not run ({inert(public.error)})."]
    if not public.failures and not stale:
        return []
    # stale: never "3 of 3 pass" unqualified, under a test cell that failed in the kernel
    lines = [f"  {what} (not scored{', not what ran above' if stale else ''}): {public.passed}/{public.total} "
             f"pass{'; failing:' if public.failures else '.'}"]
    lines += [f"{INDENT}{style('x', fg='red')} {inert(f)}" for f in public.failures]
    return lines


def render_hint(check_name: str, hint: tuple[int, str] | None, hints: tuple[str, ...], color: bool) -> str:
    """One hint for a failing check, or all of them again once every one was seen."""
    style = _styler(color)
    wrap = lambda text: textwrap.fill(text, 92, initial_indent="  ", subsequent_indent="  ")  # noqa: E731
    if not hints:
        return f'No hints for "{check_name}": read its feedback above and the notebook\'s markdown.'
    if hint is not None:
        number, text = hint
        more = ("" if number == len(hints) else
                f"\n  (`--hint` again shows the next one; {len(hints) - number} left)")
        return style(f'Hint {number} of {len(hints)} for "{check_name}":', bold=True) + "\n" + wrap(text) + more
    lines = [style(f'You have seen all {len(hints)} hints for "{check_name}"; here they are again:', bold=True)]
    lines += [wrap(f"{i}. {text}") for i, text in enumerate(hints, 1)]
    return "\n".join(lines)
