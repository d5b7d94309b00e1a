"""Hypothesis strategies for what the kit persists: random JSON, and histories shaped like the
kit's own with hostile values in every field (issue 43, class 1).

The hostile values are the ones the fourth red-team round used and their neighbours: dates in
year 9999 at -12:00, year 1, without a zone, not dates at all; negative, zero, NaN, infinite and
huge numbers, numbers as text, booleans for numbers; long strings, long lists, deep nesting.
Each field draws a valid value often enough that valid records reach fsrs and the tables.
"""
import datetime as dt
import json

from hypothesis import strategies as st

QUESTIONS = ["routing_trap", "bptt", "softmax_ce"]
"""Shipped questions the commands schedule and show (so their records are really used)."""

# -- values ------------------------------------------------------------------------------
json_scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
                | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)

HOSTILE_MOMENTS = ["9999-12-31T23:59:59-12:00", "9999-12-31T23:00:00+00:00", "0001-01-01T00:00:00+14:00",
                   "0001-01-01T00:00:00", "2026-11-27T10:00:00", "2026-11-27", "1999-12-31T23:59:59+00:00",
                   "2201-01-01T00:00:00+00:00", "not a date", "", "2026-13-40T99:99:99+00:00",
                   "2026-11-27T10:00:00+23:59", "2026-11-27T10:00:00Z"]
ZONES = [dt.timezone.utc, dt.timezone(dt.timedelta(hours=-12)), dt.timezone(dt.timedelta(hours=14))]
valid_moments = st.datetimes(min_value=dt.datetime(2001, 1, 1), max_value=dt.datetime(2199, 1, 1),
                             timezones=st.sampled_from(ZONES)).map(lambda m: m.isoformat())
moments = st.sampled_from(HOSTILE_MOMENTS) | valid_moments | json_scalars

HOSTILE_DAYS = ["9999-12-31", "0001-01-01", "1999-12-31", "2201-01-01", "2026-02-30", "2026-W48-1",
                "20261127", "2026-11-27T10:00", "", "yesterday"]
valid_days = st.dates(min_value=dt.date(2001, 1, 1), max_value=dt.date(2199, 1, 1)).map(lambda d: d.isoformat())
days = st.sampled_from(HOSTILE_DAYS) | valid_days | json_scalars

HOSTILE_NUMBERS = [-1, -1.0, 0, 0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1e308, 5e-324,
                   10**400, -10**400, 2**63, 2**64, "12", "nan", True, False, None, [], {}]
numbers = (st.sampled_from(HOSTILE_NUMBERS) | st.floats(allow_nan=True, allow_infinity=True)
           | st.integers(-10**30, 10**30) | st.floats(0.001, 100.0) | st.integers(0, 12))
small_counts = st.integers(0, 12) | st.sampled_from(HOSTILE_NUMBERS)
long_texts = st.sampled_from(["x" * 100_000, "\x1b[2J\x07\u202e", "routing_trap" * 50])
texts = st.text(max_size=20) | long_texts | json_scalars


def huge_list(item):
    """A list of ``item`` repeated up to 20,000 times (built, not drawn: drawing is slow), and to
    about 5 MB of JSON at most (past the history's 4 MiB cap, not past the test's memory)."""
    def build(pair):
        one, times = pair
        return [one] * max(1, min(times, 5_000_000 // len(json.dumps(one))))
    return st.tuples(item, st.sampled_from([1, 2, 500, 20_000])).map(build)


# -- records -----------------------------------------------------------------------------
cards = st.fixed_dictionaries({
    "card_id": st.integers(0, 2**40) | st.sampled_from(HOSTILE_NUMBERS),
    "state": st.sampled_from([1, 2, 3, 0, 4, "2", None, True, 2.0]),
    "step": st.sampled_from([None, 0, 1, 5, -1, 10**9, "0", 0.5]),
    "stability": numbers | st.none(), "difficulty": numbers | st.none(),
    "due": moments, "last_review": moments | st.none()})
card_entries = st.fixed_dictionaries({
    "card": cards | json_values, "before": st.none() | cards, "day": days,
    "first": small_counts, "rating": small_counts}, optional={
    "why": texts, "hints": small_counts, "reviews": small_counts})
card_keys = (st.tuples(st.sampled_from(QUESTIONS), st.sampled_from(["code", "spoken", "other"]))
             .map(":".join) | st.text(max_size=10))
review_sections = st.fixed_dictionaries({
    "version": st.sampled_from([1, 1, 1, 2, 0, -1, "1", None, 1.5]),
    "cards": st.dictionaries(card_keys, card_entries, max_size=6) | json_values})
interviews = st.fixed_dictionaries({"date": days, "hit": small_counts, "of": small_counts})
entries = st.fixed_dictionaries({}, optional={
    "best": numbers, "last": numbers, "max_score": numbers, "attempts": small_counts,
    "revealed": small_counts | st.integers(0, 10**30), "graded_sha256": texts,
    "hints_seen": st.dictionaries(texts.filter(lambda t: isinstance(t, str)), small_counts, max_size=3) | json_values,
    "interviews": st.lists(interviews, max_size=5) | huge_list(interviews) | json_values})
markers = st.fixed_dictionaries({"question": st.sampled_from(QUESTIONS) | texts,
                                 "started": moments, "deadline": moments})
codes = st.none() | st.fixed_dictionaries({"score": numbers, "max_score": numbers}) | json_values
summaries = st.fixed_dictionaries({"date": days, "question": st.sampled_from(QUESTIONS) | texts}, optional={
    "minutes": numbers, "elapsed_s": numbers, "timed_out": st.booleans() | json_scalars,
    "spoken": st.fixed_dictionaries({"hit": small_counts, "of": small_counts}) | json_values,
    "code": codes, "missed": st.lists(texts, max_size=3) | json_values})

plausible_histories = st.fixed_dictionaries(
    {"version": st.sampled_from([1, 2, "1", None]),
     "questions": st.dictionaries(st.sampled_from(QUESTIONS) | st.text(max_size=8), entries, max_size=4)},
    optional={"review": review_sections | json_values,
              "mock": markers | json_values,
              "mocks": st.lists(summaries, max_size=4) | huge_list(summaries) | json_values,
              "from_a_newer_kit": json_values})


def nested(value, depth: int):
    for _ in range(depth):
        value = [value]
    return value


random_histories = (json_values
                    | st.fixed_dictionaries({"questions": st.dictionaries(st.text(max_size=8), json_values,
                                                                          max_size=3)},
                                            optional={"review": json_values, "mock": json_values,
                                                      "mocks": json_values})
                    | st.tuples(plausible_histories, st.integers(20, 60)).map(
                        lambda t: {**t[0], "questions": {"bptt": nested(t[0]["questions"], t[1])}}))
