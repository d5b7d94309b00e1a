"""A running mock interview, as the other commands see it: while one runs in a folder, the
help it forbids (``grade --hint``, ``grade reveal``, ``grade start --solution``,
``grade interview``, grading the mock's question by hand) is refused with one sentence.

The mock writes ``{"question", "started", "deadline"}`` (ISO times) under the history's
``mock`` section when it starts and removes it when it ends; a mark whose deadline has passed
(a mock that was killed) counts for nothing, and so does one that fails the schema
(grader/loading/persisted.py: zoned times, a deadline at most a day after the start).
"""
from __future__ import annotations

import datetime as dt
import math

SECTION = "mock"


def running(history, moment: dt.datetime | None = None) -> dict | None:
    """The running mock's ``{"question", "deadline"}``, or None."""
    from backprop_traps.grader.learner.review import now
    from backprop_traps.grader.loading import persisted
    try:  # a marker the kit never wrote (a year-1 deadline, no zone, a day-long mock) is none
        mark = persisted.mock_marker(history.sections.get(SECTION))
    except persisted.Invalid:
        return None
    deadline = dt.datetime.fromisoformat(mark["deadline"])
    moment = moment or now()
    if deadline <= moment:
        return None
    return {"question": mark["question"], "deadline": deadline, "left": deadline - moment}


def time_left_words(seconds: float) -> str:
    """The time left in words, never rounded down to less than it is: "44 min" (whole minutes,
    rounded up, from 10 minutes on), "1 min 59 s", "45 s"."""
    seconds = max(0, math.ceil(seconds))
    if seconds >= 600:
        return f"{math.ceil(seconds / 60)} min"
    minutes, rest = divmod(seconds, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min {rest:02d} s" if rest else f"{minutes} min"


def start(history, question: str, minutes: float, moment: dt.datetime) -> dt.datetime:
    """Mark a mock of ``question`` as running for ``minutes`` from ``moment``; returns its deadline."""
    deadline = moment + dt.timedelta(minutes=minutes)
    history.sections[SECTION] = {"question": question, "started": moment.isoformat(),
                                 "deadline": deadline.isoformat()}
    return deadline


def stop(history) -> None:
    history.sections.pop(SECTION, None)


def refusal(history, what: str, question: str | None = None) -> str | None:
    """The sentence that refuses ``what`` during a running mock (for ``question``, when the
    refusal is only about the mock's own question), or None when nothing is running."""
    mock = running(history)
    if mock is None or (question is not None and question != mock["question"]):
        return None
    left = time_left_words(mock["left"].total_seconds())
    return (f"A mock interview of {mock['question']} is running ({left} left): {what} waits until "
            "it ends. Finish it in its terminal (or press Ctrl-C there to stop it).")
