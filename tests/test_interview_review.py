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


def test_one_review_a_day_the_first_outcome_counts_and_later_ones_lift_it_to_hard_at_most(here, monkeypatch):
    h = History.load()
    assert review.record_code(h, "bptt", 2, 10) == review.AGAIN
    assert review.record_code(h, "bptt", 10, 10) == review.HARD  # fixed the same day: Hard, not Good
    entry = h.sections["review"]["cards"]["bptt:code"]
    assert entry["reviews"] == 1 and entry["first"] == review.AGAIN and entry["rating"] == review.HARD
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
