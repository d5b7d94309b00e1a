"""Spaced review (grader/learner/review.py): grades and interview scores become FSRS ratings,
one review per card per day, the history keeps the cards and reads old or newer histories,
`grade next` says what is due and why, and grading a file reviews its code card."""
import json

import pytest
from click.testing import CliRunner

from backprop_traps.grader.cli import main
from backprop_traps.grader.learner import review
from backprop_traps.grader.learner.history import FILENAME, History
from backprop_traps.grader.loading.questions import solution_notebooks
from conftest import REPO

QUESTIONS = list(solution_notebooks())


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BACKPROP_TRAPS_QUESTIONS", raising=False)
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", "2026-03-02T10:00")
    return tmp_path


def at(monkeypatch, moment):
    monkeypatch.setenv("BACKPROP_TRAPS_NOW", moment)


@pytest.mark.parametrize("score, hints, rating", [
    (12, False, review.GOOD), (12, True, review.HARD), (7, False, review.HARD), (3, False, review.AGAIN),
    (0, False, review.AGAIN)])
def test_a_grade_becomes_a_rating(score, hints, rating):
    assert review.code_rating(score, 12, hints)[0] == rating


@pytest.mark.parametrize("hit, of, rating", [(6, 6, review.GOOD), (4, 6, review.HARD), (3, 6, review.HARD),
                                             (2, 6, review.AGAIN), (0, 0, review.AGAIN)])
def test_an_interview_score_becomes_a_rating(hit, of, rating):
    assert review.spoken_rating(hit, of)[0] == rating


def test_what_you_get_wrong_comes_back_sooner(here):
    h = History.load()
    review.record_spoken(h, "routing_trap", 5, 5)
    review.record_spoken(h, "softmax_ce", 1, 5)
    schedule = review.Review(h)
    good, again = schedule.due_of("routing_trap", review.SPOKEN), schedule.due_of("softmax_ce", review.SPOKEN)
    assert again.due < good.due and "1/5 key points (Again) on 2026-03-02" == again.why
    assert schedule.due_of("bptt", review.CODE).due is None  # new


def test_what_you_got_wrong_comes_back_this_session_as_in_anki(here, monkeypatch):
    """Issue 51: on day one a 0/23 card (Again) and a 16/16-with-hints card (Hard) were both
    "due in 24 hours". With a learning step, Again comes back in 10 minutes, Hard in 15, and a
    first-try Good in days; `grade next` says so in those words."""
    h = History.load()
    assert review.record_code(h, "residual_backward", 0, 23) == review.AGAIN
    h.questions["bptt"] = {"hints_seen": {"a check": 1}}
    assert review.record_code(h, "bptt", 16, 16) == review.HARD
    assert review.record_code(h, "softmax_ce", 10, 10) == review.GOOD
    schedule = review.Review(h)
    moment = schedule.moment
    assert schedule.due_of("residual_backward", review.CODE).when(moment) == "due in 10 minutes"
    assert schedule.due_of("bptt", review.CODE).when(moment) == "due in 15 minutes"
    assert schedule.due_of("softmax_ce", review.CODE).when(moment) == "due in 2 days"
    h.save()
    out = CliRunner().invoke(main, ["next"])
    assert "residual_backward code due in 10 minutes" in out.output, out.output
    at(monkeypatch, "2026-03-02T10:12")
    out = CliRunner().invoke(main, ["next"])
    assert "Due now (1)" in out.output and "residual_backward" in out.output, out.output


@pytest.mark.parametrize("ahead_s, words", [(30, "due in 1 minute"), (600, "due in 10 minutes"),
                                            (3540, "due in 59 minutes"), (3600, "due in 1 hour"),
                                            (5 * 3600, "due in 5 hours"), (86400, "due in 1 day"),
                                            (3 * 86400 + 7200, "due in 3 days")])
def test_when_a_card_is_due_in_words(ahead_s, words):
    import datetime as dt
    moment = dt.datetime(2026, 3, 2, 10, tzinfo=dt.timezone.utc)
    due = review.Due("q", review.CODE, moment + dt.timedelta(seconds=ahead_s), "")
    assert due.when(moment) == words


def test_a_failed_try_moves_on_the_same_day_and_a_review_past_its_step_is_not_raised(here, monkeypatch):
    h = History.load()
    assert review.record_code(h, "bptt", 2, 10) == review.AGAIN  # a learning step: 10 minutes
    at(monkeypatch, "2026-03-02T10:20")
    assert review.record_code(h, "bptt", 10, 10) == review.GOOD  # fixed after the step: moves on
    entry = h.sections["review"]["cards"]["bptt:code"]
    assert entry["reviews"] == 1 and entry["first"] == review.AGAIN and entry["rating"] == review.GOOD
    fixed = review.Review(h).due_of("bptt", review.CODE)
    clean = History.load()
    review.record_code(clean, "softmax_ce", 10, 10)
    first_try = review.Review(clean).due_of("softmax_ce", review.CODE)
    assert fixed.due < first_try.due  # what went wrong today comes back sooner than a clean first try
    at(monkeypatch, "2026-03-02T11:00")
    assert review.record_code(h, "bptt", 10, 10) == review.GOOD  # past its step: the day's review stands
    assert review.record_code(h, "bptt", 4, 10) == review.AGAIN  # a worse try the same day lowers it
    assert review.record_code(h, "bptt", 10, 10) == review.GOOD  # and its learning step goes on
    at(monkeypatch, "2026-03-09T10:00")
    assert review.record_code(h, "bptt", 10, 10) == review.GOOD  # another day, a clean recall
    assert h.sections["review"]["cards"]["bptt:code"]["reviews"] == 2


def test_hints_seen_since_the_last_review_cap_full_marks_at_hard(here, monkeypatch):
    h = History.load()
    h.questions["bptt"] = {"hints_seen": {"a check": 1}}
    assert review.record_code(h, "bptt", 10, 10) == review.HARD
    at(monkeypatch, "2026-03-20T10:00")
    assert review.record_code(h, "bptt", 10, 10) == review.GOOD  # no new hint since


def test_the_history_keeps_the_cards_and_other_sections_through_save_and_load(here):
    h = History.load()
    h.record_score("bptt", 10, 10)
    review.record_code(h, "bptt", 10, 10)
    h.sections["from_a_newer_kit"] = {"kept": [1, 2]}
    assert h.save()
    again = History.load()
    assert again.sections["from_a_newer_kit"] == {"kept": [1, 2]} and again.best("bptt") == (10.0, 10.0)
    assert review.Review(again).due_of("bptt", review.CODE).due is not None


def test_an_old_history_without_cards_loads_and_its_interviews_are_replayed(here):
    (here / FILENAME).write_text(json.dumps({"version": 1, "questions": {
        "bptt": {"best": 4.0, "last": 4.0, "max_score": 10.0, "attempts": 2,
                 "interviews": [{"date": "2026-02-01", "hit": 1, "of": 6}, {"date": "2026-02-10", "hit": 6, "of": 6}]}}}))
    h = History.load()
    schedule = review.Review(h)
    spoken = schedule.due_of("bptt", review.SPOKEN)
    assert spoken.due is not None and "6/6 key points (Good) on 2026-02-10" == spoken.why
    assert schedule.due_of("bptt", review.CODE).why == "graded before spaced review began"


def test_malformed_cards_are_dropped_and_a_newer_section_is_kept_untouched(here):
    good = {"card": {"card_id": 1, "state": 2, "step": None, "stability": 3.0, "difficulty": 5.0,
                     "due": "2026-03-01T10:00:00+00:00", "last_review": "2026-02-26T10:00:00+00:00"},
            "before": None, "day": "2026-02-26", "first": 3, "rating": 3, "why": "x", "hints": 0, "reviews": 1}
    (here / FILENAME).write_text(json.dumps({"version": 1, "questions": {}, "review": {"version": 1, "cards": {
        "bptt:code": good, "bptt:spoken": {"card": "not a card"}, "bptt:dance": good, "softmax_ce:code": 7}}}))
    schedule = review.Review(History.load())
    assert set(schedule.cards) == {"bptt:code"} and schedule.due_now(["bptt"])[0].question == "bptt"
    newer = {"version": 99, "cards": {"bptt:code": good}, "something": "new"}
    (here / FILENAME).write_text(json.dumps({"version": 1, "questions": {}, "review": newer}))
    h = History.load()
    review.record_spoken(h, "bptt", 6, 6)  # read what can be read, write nothing into it
    h.save()
    assert json.loads((here / FILENAME).read_text())["review"] == newer


def test_grade_next_says_what_is_due_and_why(here, monkeypatch):
    at(monkeypatch, "2026-03-01T10:00")
    h = History.load()
    review.record_code(h, "bptt", 3, 10)
    review.record_spoken(h, "softmax_ce", 5, 5)
    h.save()
    at(monkeypatch, "2026-03-05T10:00")
    out = CliRunner().invoke(main, ["next"])
    assert out.exit_code == 0, out.output
    assert "Due now (2), most overdue first:" in out.output
    lines = out.output.splitlines()
    first = next(i for i, ln in enumerate(lines) if "bptt" in ln)
    assert "code" in lines[first] and "overdue 3 days" in lines[first]
    assert "last: 3/10, mostly wrong (Again) on 2026-03-01" in lines[first] and "grade start bptt" in lines[first + 1]
    assert "softmax_ce" in out.output and "grade interview softmax_ce" in out.output
    assert "New: routing_trap" in out.output


def test_grade_next_in_an_empty_folder(here):
    out = CliRunner().invoke(main, ["next"])
    assert out.exit_code == 0 and "Nothing is due for review now." in out.output
    assert "New: routing_trap (20 questions not started)" in out.output.replace(f"({len(QUESTIONS)} ", "(20 ")


def test_grading_a_file_reviews_its_code_card_once_per_attempt(here):
    answer = REPO / "tests" / "answers" / "routing_trap" / "right_loops.py"
    (here / "mine.py").write_text(answer.read_text())
    assert CliRunner().invoke(main, ["mine.py"]).exit_code == 0
    card = History.load().sections["review"]["cards"]["routing_trap:code"]
    assert card["rating"] == review.GOOD and card["why"].startswith("12/12")
    assert CliRunner().invoke(main, ["mine.py"]).exit_code == 0  # the same file again: no new review
    assert History.load().sections["review"]["cards"]["routing_trap:code"] == card
