"""Spaced review: each question's code and its spoken answer are two cards, scheduled by FSRS-6
(the ``fsrs`` package, the scheduler Anki uses), so that what you got wrong comes back soon and
what you know comes back late.

A grade or an interview score becomes a rating (``code_rating``, ``spoken_rating``): full marks
at the first try is Good, full marks after a hint or a failed try the same day is Hard, a
partial score Hard, under half Again. As in Anki, a card rated Again or Hard while new (or
Again once learnt) goes through a learning step first: it comes back the same session
(``LEARNING_STEP`` later, Hard half as late again), and a try after that moves it on with the
rating it earns (Good: back in about a day after an Again, in days otherwise). Once a card is
past its learning step for the day, the day's review stands: a later try that day can lower
its rating (it is redone from the card before it), never raise it.

The cards live in the history file (grader/learner/history.py) under ``review``::

    {"version": 1, "cards": {"routing_trap:code": {
        "card": {...fsrs Card.to_dict()...}, "before": {...} | null, "day": "2026-11-27",
        "first": 3, "rating": 3, "why": "12/12 at the first try", "hints": 0, "reviews": 4}}}

Reading is upgrade-tolerant: a history without ``review`` starts empty (its dated interviews,
the last ``REPLAYED`` of each, are replayed into the spoken cards when a card is first asked
for), a card that fails the schema (grader/loading/persisted.py: every field range-checked
before fsrs sees it) is dropped, and a section written by a newer version is kept as it is
and not changed. ``BACKPROP_TRAPS_NOW`` (an ISO date and time)
stands in for the clock, for tests and demonstrations.
"""
from __future__ import annotations

import datetime as dt
import functools
import os
from dataclasses import dataclass

from backprop_traps.grader.loading import persisted

SECTION = "review"
VERSION = 1
CODE, SPOKEN = "code", "spoken"
KINDS = (CODE, SPOKEN)
AGAIN, HARD, GOOD, EASY = 1, 2, 3, 4
RATING_NAMES = {AGAIN: "Again", HARD: "Hard", GOOD: "Good", EASY: "Easy"}
REPLAYED = 20
"""The dated interviews of a history from before spaced review that are replayed into a spoken
card: the last ones (older ones barely move its schedule, and the replay's cost stays fixed)."""
LEARNING_STEP = dt.timedelta(minutes=10)
"""How soon a card rated Again comes back (a learning step, Anki's word): within the session,
long enough to reread the feedback and try again."""


def now() -> dt.datetime:
    """The current time, timezone-aware (``BACKPROP_TRAPS_NOW`` when set)."""
    forced = os.environ.get("BACKPROP_TRAPS_NOW")
    if forced:
        try:
            moment = dt.datetime.fromisoformat(forced)
            return moment if moment.tzinfo else moment.astimezone()
        except ValueError:
            pass
    return dt.datetime.now().astimezone()


def code_rating(score: float, max_score: float, hints_used: bool) -> tuple[int, str]:
    """The rating of one grading, and why in words."""
    share = score / max_score if max_score else 0.0
    shown = f"{score:g}/{max_score:g}"
    if share >= 1.0:
        return (HARD, f"{shown} after a hint") if hints_used else (GOOD, f"{shown}")
    if share >= 0.5:
        return HARD, f"{shown}, partly right"
    return AGAIN, f"{shown}, mostly wrong"


def spoken_rating(hit: int, of: int) -> tuple[int, str]:
    """The rating of one spoken answer's checklist, and why in words."""
    shown = f"{hit}/{of} key points"
    if of and hit == of:
        return GOOD, shown
    if of and hit >= 0.5 * of:
        return HARD, shown
    return AGAIN, shown


@dataclass
class Due:
    """One card's place in the schedule."""
    question: str
    kind: str
    due: dt.datetime | None
    """When it is due; None for a card never reviewed (new)."""
    why: str
    """The last rating's reason and date ("6/12, partly right on 2026-11-20"), or why it is new."""

    def overdue(self, moment: dt.datetime) -> dt.timedelta | None:
        return None if self.due is None else moment - self.due

    def when(self, moment: dt.datetime) -> str:
        """"overdue 3 days", "due now", "due in 10 minutes", "due in 5 hours", "due in 2 days",
        or "new"."""
        if self.due is None:
            return "new"
        late = moment - self.due
        if late >= dt.timedelta(days=1):
            return f"overdue {late.days} day{'s' * (late.days != 1)}"
        if late >= dt.timedelta(0):
            return "due now"
        ahead = -late
        if ahead < dt.timedelta(minutes=59, seconds=30):  # a learning step: comes back this session
            minutes = max(1, round(ahead.total_seconds() / 60))
            return f"due in {minutes} minute{'s' * (minutes != 1)}"
        if ahead < dt.timedelta(hours=23, minutes=30):
            hours = max(1, round(ahead.total_seconds() / 3600))
            return f"due in {hours} hour{'s' * (hours != 1)}"
        days = round(ahead / dt.timedelta(days=1))
        return f"due in {days} day{'s' * (days != 1)}"


@functools.lru_cache(maxsize=1)
def _scheduler():
    """FSRS-6 with its default weights, one learning step (``LEARNING_STEP``, for new cards and
    for lapses: what you got wrong comes back this session, as in Anki) and no random fuzz (a
    schedule you can explain)."""
    from fsrs import Scheduler
    return Scheduler(learning_steps=(LEARNING_STEP,), relearning_steps=(LEARNING_STEP,), enable_fuzzing=False)


class Review:
    """The cards of one history, read on creation; ``store`` writes them back into it."""

    def __init__(self, history, moment: dt.datetime | None = None):
        self.history = history
        self.moment = moment or now()
        raw = history.sections.get(SECTION)
        self.frozen = isinstance(raw, dict) and isinstance(raw.get("version"), int) and raw["version"] > VERSION
        """A section from a newer version: read what can be read, never write it."""
        cards = raw.get("cards") if isinstance(raw, dict) else None
        # History.load checked them already (and said what it set aside); a History built in
        # code, or a newer version's section, is checked here: the check is cheap and bounded
        self.cards: dict[str, dict] = persisted.cards(cards, persisted.SetAside()) if cards else {}
        self._replayed: set[str] = set()
        """Questions whose old interviews were replayed (or needed none)."""

    # -- reading ---------------------------------------------------------------------
    def due_of(self, question: str, kind: str) -> Due:
        if kind == SPOKEN:
            self._replay_old_interviews(question)
        entry = self.cards.get(f"{question}:{kind}")
        if entry is None:
            if kind == CODE and self.history.best(question):
                return Due(question, kind, None, "graded before spaced review began")
            return Due(question, kind, None, "never " + ("graded" if kind == CODE else "rehearsed"))
        card = _card(entry["card"])
        return Due(question, kind, card.due.astimezone(), f"{entry['why']} on {entry['day']}")

    def schedule(self, questions: list[str]) -> list[Due]:
        """Every card of ``questions``: reviewed cards by due date (most overdue first), then the
        new ones in question order."""
        cards = [self.due_of(q, k) for q in questions for k in KINDS]
        seen = sorted((c for c in cards if c.due is not None), key=lambda c: c.due)
        return seen + [c for c in cards if c.due is None]

    def due_now(self, questions: list[str], kind: str | None = None) -> list[Due]:
        """The reviewed cards due now, most overdue first."""
        return [c for c in self.schedule(questions)
                if c.due is not None and c.due <= self.moment and (kind is None or c.kind == kind)]

    def pick(self, questions: list[str], kind: str | None = None) -> str | None:
        """The question to practise: the most overdue card's; else the first question with a new
        card (of ``kind``); else the one due soonest. None without questions."""
        due = self.due_now(questions, kind)
        if due:
            return due[0].question
        fresh = [c for c in self.schedule(questions) if c.due is None and (kind is None or c.kind == kind)]
        if fresh:
            return fresh[0].question
        later = [c for c in self.schedule(questions) if kind is None or c.kind == kind]
        return later[0].question if later else None

    # -- rating ----------------------------------------------------------------------
    def rate(self, question: str, kind: str, rating: int, why: str, hints: int = 0) -> int:
        """Review ``question``'s ``kind`` card with ``rating`` now; returns the rating used: the
        rating itself, but a card already past its learning step today is re-reviewed from its
        card before that review, with the lower of the two ratings (see the module docstring)."""
        from fsrs import Card, Rating, State
        if kind == SPOKEN:
            self._replay_old_interviews(question)
        key = f"{question}:{kind}"
        today = self.moment.date().isoformat()
        entry = self.cards.get(key)
        if entry is None or entry["day"] != today:
            first = used = rating
            start = _card(entry["card"]) if entry else Card()
        else:
            first, current = entry["first"], _card(entry["card"])
            if current.state in (State.Learning, State.Relearning):  # the next learning step
                used, start = rating, current
            else:
                used = min(rating, entry["rating"])
                start = _card(entry["before"]) if entry["before"] else Card()
        before = start.to_dict()
        card, _ = _scheduler().review_card(start, Rating(used), self.moment.astimezone(dt.timezone.utc))
        self.cards[key] = {"card": card.to_dict(), "before": before, "day": today, "first": first,
                           "rating": used, "why": f"{why} ({RATING_NAMES[used]})", "hints": int(hints),
                           "reviews": (entry or {}).get("reviews", 0) + (entry is None or entry["day"] != today)}
        return used

    def hints_at_last_review(self, question: str) -> int:
        entry = self.cards.get(f"{question}:{CODE}")
        return entry["hints"] if entry else 0

    def store(self) -> None:
        """Put the cards back into the history (``history.save()`` writes the file)."""
        if not self.frozen:
            self.history.sections[SECTION] = {"version": VERSION, "cards": self.cards}

    # -- upgrade ---------------------------------------------------------------------
    def _replay_old_interviews(self, question: str) -> None:
        """A history from before spaced review has dated interviews: replay the last
        ``REPLAYED`` of ``question``'s into its spoken card, the first time that card is asked
        for, so that its first schedule already knows them."""
        if question in self._replayed:
            return
        self._replayed.add(question)
        entry = self.history.questions.get(question, {})
        if self.frozen or f"{question}:{SPOKEN}" in self.cards or not entry.get("interviews"):
            return
        saved = self.moment
        for run in entry["interviews"][-REPLAYED:]:
            try:
                day = dt.date.fromisoformat(str(run["date"])[:10])
                self.moment = dt.datetime.combine(day, dt.time(12)).astimezone()
            except (KeyError, TypeError, ValueError, OverflowError):
                continue
            if self.moment <= saved:
                self.rate(question, SPOKEN, *spoken_rating(run["hit"], run["of"]))
        self.moment = saved


def _card(raw: dict):
    """An fsrs Card from a dictionary ``persisted.card`` checked (or fsrs itself wrote)."""
    from fsrs import Card
    return Card.from_dict(raw)


def hints_seen(history, question: str) -> int:
    """How many hints the learner has seen for ``question``, all checks together."""
    return sum(history.questions.get(question, {}).get("hints_seen", {}).values())


def record_code(history, question: str, score: float, max_score: float) -> int:
    """Rate a grading of ``question`` into ``history`` (hints seen since the last review cap it
    at Hard); returns the rating used."""
    review = Review(history)
    hints = hints_seen(history, question)
    rating, why = code_rating(score, max_score, hints > review.hints_at_last_review(question))
    used = review.rate(question, CODE, rating, why, hints)
    review.store()
    return used


def record_spoken(history, question: str, hit: int, of: int) -> int:
    """Rate a spoken answer's checklist of ``question`` into ``history``."""
    review = Review(history)
    used = review.rate(question, SPOKEN, *spoken_rating(hit, of))
    review.store()
    return used
