"""A mock interview (``grade mock``): one question against a clock, with no help on the way.

It chains what an interview asks: the spoken answer, then the code (graded when the learner
says done, or when the clock runs out), then the follow-ups; the key points, the hired answer
and the follow-ups' answers are shown only in the summary at the end, which says what was
right, what was missed and what is due next. The spoken answer is judged by the key points'
matcher alone (no self-ticking: an interviewer does not ask you to grade yourself).

The flow talks through ``ask(prompt, seconds) -> line | None | TIMEOUT`` (None at the end of
input, ``TIMEOUT`` when the seconds ran out first), ``say(text)`` and ``grade(path)``, so the
command gives it a terminal and the sandboxed grader, and tests a script.
"""
from __future__ import annotations

import re
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from backprop_traps.grader.learner import rehearsal
from backprop_traps.grader.loading.persisted import MAX_MOCKS as MAX_SUMMARIES
from backprop_traps.grader.sandbox.inert import inert

TIMEOUT = object()
"""What ``ask`` returns when the clock ran out before a line came."""
MAX_MOCKS = MAX_SUMMARIES
"""The history keeps this many mock summaries (the oldest go first)."""
SECTION = "mocks"


class Clock:
    """The time left of a mock of ``minutes``, from now (``monotonic`` for tests)."""

    def __init__(self, minutes: float, monotonic=time.monotonic):
        self.monotonic = monotonic
        self.start = monotonic()
        self.limit = minutes * 60.0

    def left(self) -> float:
        return max(0.0, self.limit - (self.monotonic() - self.start))

    def elapsed(self) -> float:
        return min(self.limit, self.monotonic() - self.start)

    def shown(self) -> str:
        seconds = int(round(self.left()))
        return f"{seconds // 60:02d}:{seconds % 60:02d}"

    def redrawn(self, prompt: str) -> str:
        """``prompt`` with its ``[mm:ss]`` showing the time left now (a prompt drawn again after
        a notice must not show the time of when it was first drawn)."""
        return re.sub(r"^\[\d+:\d\d\]", lambda _: f"[{self.shown()}]", prompt, count=1)


@dataclass
class Outcome:
    """What one mock found: the parts of the summary, and what the history keeps."""
    question: str
    minutes: float
    spoken: dict = field(default_factory=dict)
    """``rehearsal.check``'s result for the spoken answer."""
    code: dict | None = None
    """``{"submission", "score", "max_score", "passed": [...], "failed": [...], "error"}``, or None
    when nothing was graded."""
    follow_ups: list = field(default_factory=list)
    """``(question, the learner's answer, ours)`` for each follow-up asked."""
    skipped: list = field(default_factory=list)
    """``(question, ours)`` for each follow-up the clock left no time for."""
    timed_out: bool = False
    elapsed_s: float = 0.0

    def record(self, date: str) -> dict:
        """The summary the history keeps."""
        code = None if self.code is None else {k: self.code[k] for k in ("score", "max_score")}
        return {"date": date, "question": self.question, "minutes": self.minutes,
                "elapsed_s": round(self.elapsed_s), "timed_out": self.timed_out,
                "follow_ups_skipped": len(self.skipped),
                "spoken": {"hit": self.spoken.get("hit", 0), "of": self.spoken.get("of", 0)}, "code": code,
                "missed": [p["point"] for p in self.spoken.get("points", []) if not p["hit"]]
                + (self.code or {}).get("failed", [])}


def _lines(ask, prompt, clock: Clock) -> tuple[list[str], bool, bool]:
    """Lines until an empty one (or the end of input); True when the clock ran out; True when
    they came to more than an answer may be (``rehearsal.MAX_ANSWER_BYTES``, the cap that
    ``grade interview --answer`` applies too): what comes past it is read to the empty line
    that ends the answer, and dropped."""
    typed, size, over = [], 0, False
    while True:
        line = ask(prompt(), clock.left())
        if line is TIMEOUT:
            return typed, True, over
        if line is None or not line.strip():
            return typed, False, over
        size += rehearsal.answer_size(line) + 1
        over = over or size > rehearsal.MAX_ANSWER_BYTES
        if not over:
            typed.append(line)


def _is_file(path: Path) -> bool:
    """Whether a typed path names a file (a name too long, or with a NUL, names none)."""
    try:
        return path.expanduser().is_file()
    except (OSError, ValueError, RuntimeError):
        return False


def _code_result(result, path: Path) -> dict:
    return {"submission": str(path), "score": float(result.score), "max_score": float(result.max_score),
            "passed": [t.name for t in result.tests if t.passed],
            "failed": [t.name for t in result.tests if not t.passed], "error": result.error}


def run(chosen: rehearsal.Rehearsal, notebook: Path, minutes: float, ask, say, grade,
        clock: Clock | None = None) -> Outcome:
    """The mock itself; ``notebook`` is the file graded when the learner types ``done``."""
    it = chosen.interview
    clock = clock or Clock(minutes)
    outcome = Outcome(chosen.question, minutes)
    prompt = lambda: f"[{clock.shown()}] > "  # noqa: E731
    say(f"Mock interview · {chosen.question} · question {chosen.number} · {clock.shown()} on the clock.")
    say("No hints and no reveal until it ends (grade --hint, grade reveal and grade interview refuse "
        "meanwhile). An empty line ends each answer; the prompt shows the time left.\n")
    say(textwrap.fill(it.question, rehearsal.WIDTH))
    say("Answer aloud, or type your answer.")
    typed, outcome.timed_out, over = _lines(ask, prompt, clock)
    if over:
        say(f"{rehearsal.too_long('Your answer')}, and counts as no answer.")
        typed = []
    outcome.spoken = rehearsal.check(chosen, "\n".join(typed))
    submission = notebook
    if not outcome.timed_out:
        say(f"\nNow the code: write it in {notebook.name} (in Jupyter or your editor). Type done when "
            "it is done, or the path of the file to grade; it is graded then, or when the clock runs "
            "out. Enter shows the clock.")
        while True:
            line = ask(f"[{clock.shown()}] done? ", clock.left())
            if line is TIMEOUT:
                outcome.timed_out = True
                say("\nTime is up: your code is graded as it is.")
                break
            if line is None or line.strip().lower() in ("done", "d"):
                break
            if line.strip():
                candidate = Path(line.strip()[:4096])
                if _is_file(candidate):
                    submission = candidate
                    break
                say(f"{inert(line.strip(), 80)} is not a file here; type done to grade {notebook.name}.")
    if submission.is_file():
        say(f"Grading {submission.name} ...")
        outcome.code = _code_result(grade(submission), submission)
    else:
        say(f"{submission.name} is not there: no code to grade.")
    if it.follow_ups and not outcome.timed_out:
        say(f"\nFollow-ups ({len(it.follow_ups)}): answer each aloud or typed; ours come in the summary.")
    for n, (question, ours) in enumerate(it.follow_ups, 1):
        if outcome.timed_out or clock.left() <= 0:
            outcome.timed_out = True
            outcome.skipped.append((question, ours))
            continue
        say(f"\n  {n}/{len(it.follow_ups)}  {question}")
        said, outcome.timed_out, _ = _lines(ask, prompt, clock)
        outcome.follow_ups.append((question, " ".join(said), ours))
    outcome.elapsed_s = clock.elapsed()
    return outcome


def summary(outcome: Outcome, chosen: rehearsal.Rehearsal, due_next: str) -> str:
    """The one summary a mock ends with: what was right, what was missed, what is due next."""
    it = chosen.interview
    minutes, seconds = divmod(int(outcome.elapsed_s), 60)
    lines = ["", "=" * 30 + " Mock over " + "=" * 30,
             f"{outcome.question}: {minutes} min {seconds:02d} s of {outcome.minutes:g} min"
             + (" (the clock ran out)." if outcome.timed_out else "."), ""]
    spoken = outcome.spoken
    lines.append(f"Spoken answer: {spoken.get('hit', 0)}/{spoken.get('of', 0)} key points.")
    for p in spoken.get("points", []):
        lines.append(f"  {'right ' if p['hit'] else 'missed'}  {p['point']}")
        lines.append(f"          {rehearsal.evidence_line(p)}")
    code = outcome.code
    if code is None:
        lines += ["", "Code: nothing graded."]
    elif code["error"]:
        lines += ["", f"Code: not graded: {inert(code['error'], 200)}"]
    else:
        lines += ["", f"Code: {code['score']:g}/{code['max_score']:g} ({Path(code['submission']).name})."]
        lines += [f"  right   {name}" for name in code["passed"]]
        lines += [f"  missed  {name}" for name in code["failed"]]
    lines += ["", "The answer that gets you hired:", rehearsal._block(it.hired)]
    if outcome.follow_ups:
        lines += ["", "Follow-ups: yours, then ours."]
        for question, yours, ours in outcome.follow_ups:
            lines += [rehearsal._block(question), rehearsal._block("you: " + (inert(yours, 400) or "(aloud)"), "      "),
                      rehearsal._block("us: " + ours, "      ")]
    if outcome.skipped:
        lines += ["", f"Follow-ups the clock left no time for ({len(outcome.skipped)}): "
                      "answer them aloud now, then read ours."]
        for question, ours in outcome.skipped:
            lines += [rehearsal._block(question), rehearsal._block("us: " + ours, "      ")]
    lines += ["", f"Due next: {due_next}"]
    return "\n".join(lines)
