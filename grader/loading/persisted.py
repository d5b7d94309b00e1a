"""The one schema of everything the kit persists, checked field by field on load.

What the kit writes, it reads back only through here: the learner's history
(``.backprop_traps_history.json``: per-question scores, hints, reveals and interviews; the
spaced-review cards, fsrs ``Card`` dictionaries; the running-mock marker; the mock summaries)
and a batch's stored results and their sidecars (grader/batch/store.py). A file on disk is
data anyone could have edited: every number must be finite and in its range, every date an
ISO date (with a zone where it is a moment) between the years 2000 and 2200, every list and
string bounded, every enum one the kit knows (grader/loading/fields.py).

A record that fails is *set aside*: left out of what the commands use, its reason noted in
``SetAside`` (the history says it in one sentence and keeps a copy of the file as it was), so
that no value the kit never wrote can crash a command, block one (a mock "running" until 2200)
or stop a grading from being recorded. Every list and object is cut to a fixed number of
records *before* it is read, so a load costs at most a fixed amount of work whatever the
file holds (its size is capped before reading: grader/loading/bounded.py).
"""
from __future__ import annotations

import datetime as dt

from backprop_traps.grader.loading.fields import (Invalid, choice, count, day, first_items, flag, latest,
                                                  mapping, moment, number, text)

MAX_QUESTIONS = 100
"""Questions a history keeps (24 ship; a course adds a few)."""
MAX_INTERVIEWS = 200
"""Rehearsals kept per question (half a year of daily practice of one question); the newest
are kept. With ``MAX_QUESTIONS``, at most 20,000 rehearsals are ever read."""
MAX_HINT_CHECKS = 100
MAX_CARDS = 2 * MAX_QUESTIONS
MAX_MOCKS = 200
MAX_MISSED = 100
MAX_TESTS = 500
"""Checks in one stored result (a question has about a dozen)."""
SCORE_MAX = 1e6
COUNT_MAX = 10**9
KEY_POINTS_MAX = 1000
MINUTES_MAX = 24 * 60.0
"""The longest mock (``grade mock --minutes`` is bounded by the same number)."""
NAME_CHARS = 200
"""A question id or a check's name."""
CARD_ID_MAX = 2**63 - 1
STABILITY = (0.001, 1e7)
"""fsrs keeps a card's stability (days) at least 0.001; a negative one makes its forgetting
curve a complex number."""
DIFFICULTY = (1.0, 10.0)
"""fsrs's difficulty is clamped to this range."""
STATES = (1, 2, 3)
"""fsrs ``State``: Learning, Review, Relearning."""
RATINGS = (1, 2, 3, 4)
"""fsrs ``Rating``: Again, Hard, Good, Easy."""
KINDS = ("code", "spoken")


class SetAside:
    """What a load left out, and why: one reason per record."""

    def __init__(self):
        self.reasons: list[str] = []

    def note(self, where: str, why) -> None:
        self.reasons.append(f"{where}: {why}")

    def __bool__(self) -> bool:
        return bool(self.reasons)

    def sentence(self, name: str) -> str:
        """One sentence naming how many records were set aside, with the first reason."""
        n = len(self.reasons)
        more = f" (and {n - 1} more)" if n > 1 else ""
        return (f"{name}: {n} record{'s' * (n != 1)} that the kit never writes {'were' if n != 1 else 'was'} "
                f"set aside and not used ({self.reasons[0]}{more})")


def _optional(raw: dict, key: str, check, default):
    """``check(raw[key])`` when the key is there, else ``default`` (older files lack some keys)."""
    return check(raw[key]) if key in raw else default


# -- the history's questions ---------------------------------------------------------------
def interview(raw) -> dict:
    """One rehearsal ``{"date", "hit", "of"}``."""
    if type(raw) is dict:  # the common case first: a history may hold 20,000 of these
        hit, of, date = raw.get("hit"), raw.get("of"), raw.get("date")
        if type(hit) is int and type(of) is int and 0 <= hit <= of <= KEY_POINTS_MAX:
            return {"date": day(date, "date"), "hit": hit, "of": of}
    raw = mapping(raw, "interview")
    of = count(raw.get("of"), "of", KEY_POINTS_MAX)
    hit = count(raw.get("hit"), "hit", of)
    return {"date": day(raw.get("date"), "date"), "hit": hit, "of": of}


def question_entry(question: str, raw, aside: SetAside) -> dict:
    """One question's entry: a field that fails is left out (the rest of the entry is kept)."""
    entry: dict = {}
    where = f"question {question}"
    try:
        raw = mapping(raw, "its entry")
    except Invalid as why:
        aside.note(where, why)
        return entry
    checks = {"best": lambda v: number(v, "best", 0, SCORE_MAX),
              "last": lambda v: number(v, "last", 0, SCORE_MAX),
              "max_score": lambda v: number(v, "max_score", 0, SCORE_MAX),
              "attempts": lambda v: count(v, "attempts", COUNT_MAX),
              "revealed": lambda v: count(v, "revealed", COUNT_MAX),
              "graded_sha256": lambda v: text(v, "graded_sha256", 64)}
    for key, check in checks.items():
        if key in raw:
            try:
                entry[key] = check(raw[key])
            except Invalid as why:
                aside.note(where, why)
    if "hints_seen" in raw:
        try:
            seen = {}
            for check_name, n in first_items(raw["hints_seen"], "hints_seen", MAX_HINT_CHECKS):
                seen[text(check_name, "a hint's check", NAME_CHARS)] = count(n, "hints seen", COUNT_MAX)
            entry["hints_seen"] = seen
        except Invalid as why:
            aside.note(where, why)
    if "interviews" in raw:
        try:
            runs = latest(raw["interviews"], "interviews", MAX_INTERVIEWS)
        except Invalid as why:
            aside.note(where, why)
            runs = []
        entry["interviews"] = []
        for run in runs:
            try:
                entry["interviews"].append(interview(run))
            except Invalid as why:
                aside.note(f"{where}, an interview", why)
    return entry


def questions(raw, aside: SetAside) -> dict:
    """The ``questions`` object: at most ``MAX_QUESTIONS`` entries, each checked."""
    found = {}
    for question, entry in first_items(raw, "questions", MAX_QUESTIONS):
        try:
            question = text(question, "a question id", NAME_CHARS)
        except Invalid as why:
            aside.note("a question", why)
            continue
        found[question] = question_entry(question, entry, aside)
    return found


# -- the spaced-review cards (grader/learner/review.py) ------------------------------------
def card(raw) -> dict:
    """An fsrs ``Card.to_dict()``, checked before fsrs sees it (``Card.from_dict`` converts
    whatever it is given, and its scheduler then computes with it)."""
    raw = mapping(raw, "card")
    state = choice(raw.get("state"), "state", STATES)
    step = raw.get("step")
    step = None if step is None else count(step, "step", 100)
    stability, difficulty = raw.get("stability"), raw.get("difficulty")
    stability = None if stability is None else number(stability, "stability", *STABILITY)
    difficulty = None if difficulty is None else number(difficulty, "difficulty", *DIFFICULTY)
    if (stability is None) != (difficulty is None) or (stability is None and state != 1):
        raise Invalid("a reviewed card needs both a stability and a difficulty")
    if (step is None) != (state == 2):
        raise Invalid("a card in learning needs a step, and only it")
    last = raw.get("last_review")
    return {"card_id": count(raw.get("card_id"), "card_id", CARD_ID_MAX), "state": state, "step": step,
            "stability": stability, "difficulty": difficulty, "due": moment(raw.get("due"), "due").isoformat(),
            "last_review": None if last is None else moment(last, "last_review").isoformat()}


def card_entry(raw) -> dict:
    """One card of the review section, as ``Review`` keeps it."""
    raw = mapping(raw, "card entry")
    before = raw.get("before")
    return {"card": card(raw.get("card")), "before": None if before is None else card(before),
            "day": day(raw.get("day"), "day"),
            "first": choice(raw.get("first"), "first rating", RATINGS),
            "rating": choice(raw.get("rating"), "rating", RATINGS),
            "why": _optional(raw, "why", lambda v: text(v, "why", 120, cut=True), ""),
            "hints": _optional(raw, "hints", lambda v: count(v, "hints", COUNT_MAX), 0),
            "reviews": _optional(raw, "reviews", lambda v: count(v, "reviews", COUNT_MAX), 1)}


def card_key(key) -> str:
    """``"<question>:<kind>"``."""
    key = text(key, "a card's key", NAME_CHARS + 10)
    if key.rpartition(":")[2] not in KINDS:
        raise Invalid(f"a card's key {key[:40]!r} names no kind of card")
    return key


def cards(raw, aside: SetAside) -> dict:
    """The review section's ``cards``: at most ``MAX_CARDS``, each checked."""
    found = {}
    try:
        pairs = first_items(raw, "cards", MAX_CARDS)
    except Invalid as why:
        aside.note("the review cards", why)
        return found
    for key, entry in pairs:
        try:
            key = card_key(key)
            found[key] = card_entry(entry)
        except Invalid as why:
            aside.note(f"review card {str(key)[:60]}", why)
    return found


def review_section(raw, version: int, aside: SetAside):
    """The ``review`` section: checked, or kept as it is when a newer kit wrote it (its
    ``Review`` then reads it card by card and never writes it); None when it is unusable."""
    try:
        raw = mapping(raw, "the review section")
        written_by = count(raw.get("version", version), "its version", 10**6, lo=1)
    except Invalid as why:
        aside.note("the review section", why)
        return None
    if written_by > version:
        return raw
    return {"version": written_by, "cards": cards(raw.get("cards", {}), aside)}


# -- the mock interview (grader/learner/mock_clock.py, grader/learner/mock.py) -------------
def mock_marker(raw) -> dict:
    """The running mock's ``{"question", "started", "deadline"}``: a deadline after its start
    and at most ``MINUTES_MAX`` later (a marker "running" until 2200 blocks nothing)."""
    raw = mapping(raw, "the running mock")
    started, deadline = moment(raw.get("started"), "started"), moment(raw.get("deadline"), "deadline")
    if not dt.timedelta(0) < deadline - started <= dt.timedelta(minutes=MINUTES_MAX):
        raise Invalid(f"its deadline is not within {MINUTES_MAX:g} minutes after its start")
    return {"question": text(raw.get("question"), "question", NAME_CHARS),
            "started": started.isoformat(), "deadline": deadline.isoformat()}


def _spoken(raw) -> dict:
    raw = mapping(raw, "spoken")
    of = count(raw.get("of", 0), "of", KEY_POINTS_MAX)
    return {"hit": count(raw.get("hit", 0), "hit", of), "of": of}


def _code(raw) -> dict | None:
    if raw is None:
        return None
    raw = mapping(raw, "code")
    return {"score": number(raw.get("score"), "score", 0, SCORE_MAX),
            "max_score": number(raw.get("max_score"), "max_score", 0, SCORE_MAX)}


def mock_summary(raw) -> dict:
    """One finished mock's summary, as grader/learner/mock.py's ``Outcome.record`` writes it."""
    raw = mapping(raw, "mock summary")
    return {"date": day(raw.get("date"), "date"),
            "question": text(raw.get("question"), "question", NAME_CHARS),
            "minutes": _optional(raw, "minutes", lambda v: number(v, "minutes", 0, MINUTES_MAX), 0.0),
            "elapsed_s": _optional(raw, "elapsed_s", lambda v: number(v, "elapsed_s", 0, 60 * MINUTES_MAX), 0.0),
            "timed_out": _optional(raw, "timed_out", lambda v: flag(v, "timed_out"), False),
            "spoken": _optional(raw, "spoken", _spoken, {"hit": 0, "of": 0}),
            "code": _optional(raw, "code", _code, None),
            "missed": [text(m, "a missed point", 500, cut=True)
                       for m in _optional(raw, "missed", lambda v: latest(v, "missed", MAX_MISSED), [])]}


def mock_summaries(raw, aside: SetAside) -> list[dict]:
    """The ``mocks`` section: the last ``MAX_MOCKS`` summaries, each checked."""
    try:
        found = latest(raw, "the mock summaries", MAX_MOCKS)
    except Invalid as why:
        aside.note("the mock summaries", why)
        return []
    kept = []
    for summary in found:
        try:
            kept.append(mock_summary(summary))
        except Invalid as why:
            aside.note("a mock summary", why)
    return kept


# -- the whole history ---------------------------------------------------------------------
REVIEW, MOCK, MOCKS = "review", "mock", "mocks"
REVIEW_VERSION = 1


def history(raw) -> tuple[dict, dict, SetAside] | None:
    """``(questions, other sections, what was set aside)`` of a history document, or None when
    it is no history at all (not an object, no ``questions`` object: the file is broken).
    Sections this kit does not know (a newer kit's) are kept as they are and never read."""
    if not isinstance(raw, dict) or not isinstance(raw.get("questions"), dict):
        return None
    aside = SetAside()
    found = questions(raw["questions"], aside)
    sections = {}
    for key, value in raw.items():
        if key in ("version", "questions"):
            continue
        if key == REVIEW:
            value = review_section(value, REVIEW_VERSION, aside)
        elif key == MOCK:
            try:
                value = mock_marker(value)
            except Invalid as why:
                aside.note("the running mock", why)
                value = None
        elif key == MOCKS:
            value = mock_summaries(value, aside)
        if value is not None:
            sections[key] = value
    return found, sections, aside


# -- a batch's stored results (grader/batch/store.py) --------------------------------------
BATCH_STATUSES = ("graded", "worker-failed", "grader-error")
"""grader/batch/store.py's sidecar statuses."""
SEED_MAX = 2**128
LONG_TEXT = 20_000
"""Feedback, an error, a replay command: cut here (the report shows a sentence or two)."""


def _maybe(raw: dict, key: str, check):
    """``check(raw[key])`` unless the key is missing or null (then None)."""
    value = raw.get(key)
    return None if value is None else check(value)


def _stored_test(raw) -> dict:
    raw = mapping(raw, "a check's result")
    return {**raw, "name": text(raw.get("name", ""), "a check's name", LONG_TEXT, cut=True),
            "points": number(raw.get("points") or 0, "points", 0, SCORE_MAX),
            "max_points": number(raw.get("max_points") or 0, "max_points", 0, SCORE_MAX),
            "passed": flag(raw.get("passed", False), "passed"),
            "trap": _maybe(raw, "trap", lambda v: text(v, "trap", NAME_CHARS)),
            "feedback": text(raw.get("feedback") or "", "feedback", LONG_TEXT, cut=True)}


def batch_result(raw) -> dict:
    """A stored result (the CONTRACT's object): the fields the gradebook, the exports and
    `grade show` compute with are checked; keys the kit does not know are kept as they are."""
    raw = mapping(raw, "the result")
    checked = {"question": _maybe(raw, "question", lambda v: text(v, "question", NAME_CHARS)),
               "score": number(raw.get("score") or 0, "score", 0, SCORE_MAX),
               "max_score": number(raw.get("max_score") or 0, "max_score", 0, SCORE_MAX),
               "error": _maybe(raw, "error", lambda v: text(v, "error", LONG_TEXT, cut=True)),
               "tests": [_stored_test(t) for t in latest(raw.get("tests") or [], "tests", MAX_TESTS)],
               "warnings": [text(w, "a warning", LONG_TEXT, cut=True)
                            for w in latest(raw.get("warnings") or [], "warnings", MAX_TESTS)],
               "seed": _maybe(raw, "seed", lambda v: count(v, "seed", SEED_MAX))}
    return {**raw, **{k: v for k, v in checked.items() if k in raw}}


def batch_sidecar(raw) -> dict:
    """A result's sidecar (``<name>.run.json``): who, which file, which seed, how it went."""
    raw = mapping(raw, "the sidecar")
    checked = {"student": text(raw.get("student", ""), "student", LONG_TEXT),
               "file": text(raw.get("file", ""), "file", LONG_TEXT),
               "status": _maybe(raw, "status", lambda v: choice(v, "status", BATCH_STATUSES)),
               "seed": _maybe(raw, "seed", lambda v: count(v, "seed", SEED_MAX)),
               "seconds": _maybe(raw, "seconds", lambda v: number(v, "seconds", 0, 1e7)),
               "untouched_stub": flag(raw.get("untouched_stub", False), "untouched_stub")}
    for key in ("question_from_layout", "sha256", "submitted_at", "token", "replay", "replay_by_token",
                "draw", "seeded_by", "isolation"):
        checked[key] = _maybe(raw, key, lambda v, key=key: text(v, key, LONG_TEXT))
    return {**raw, **checked}
