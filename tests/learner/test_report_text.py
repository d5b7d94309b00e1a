"""The terminal report's wording (issue 38, item 5): a sentence repeated across checks is
noted "as above" once, a parenthesis is never cut in two, and the score line says points and
numbers of checks apart."""
import re

from backprop_traps.grader.engine.results import CheckResult, GradeResult, VisibleTests
from backprop_traps.grader.learner.report import AS_ABOVE, once, render, sentences

MISSING = ("maxpool2d_backward is not defined in your code (did an error stop the cell that "
           "defines it? See the warnings above the checks)")


def test_a_parenthesis_is_one_sentence():
    assert sentences(MISSING) == [MISSING]
    assert sentences("`a.b` is wrong. See (this. Or that.) Then go.") == [
        "`a.b` is wrong.", "See (this. Or that.) Then go."]


def test_a_repeated_parenthesis_leaves_no_fragment():
    shown: set[str] = set()
    text = "The check failed. Your " + MISSING
    assert once(text, shown) == text
    again = once(text, shown)
    assert again == "The check failed. " + AS_ABOVE and "See the warnings" not in again
    assert once(MISSING, set()) == MISSING  # a feedback's first sentence is always shown


def test_the_as_above_note_is_never_printed_twice_in_a_row():
    first = ("`dx` from f is wrong. This is a long sentence that explains the first thing at length.\n"
             "Another long sentence that explains the second thing at great length.")
    shown: set[str] = set()
    once(first, shown)
    again = once(first, shown)
    assert again.count(AS_ABOVE) == 1, again
    assert once("Head.\nAnother long sentence that explains the second thing at great length.\n"
                "This is a long sentence that explains the first thing at length.", shown) == "Head.\n" + AS_ABOVE
    # each run of dropped text gets its note, an example its introducing line
    mixed = once("Head.\nThis is a long sentence that explains the first thing at length.\n"
                 "Another long sentence that explains the second thing at great length.\n  x = 1\n"
                 "This is a long sentence that explains the first thing at length.", shown)
    assert mixed.splitlines() == ["Head.", AS_ABOVE, "Another long sentence that explains the second thing "
                                  "at great length.", "  x = 1", AS_ABOVE]


def test_the_score_says_points_and_checks_apart():
    tests = [CheckResult("a", 2.0, 2.0, True), CheckResult("b", 0.0, 3.0, False, feedback="wrong."),
             CheckResult("c", 1.0, 1.0, True)]
    result = GradeResult("nb.ipynb", "q", 3.0, 6.0, tests=tests, seed=1, isolation="bubblewrap",
                         public=VisibleTests(2, 3, ["x t: AssertionError"]))
    text = render(result, color=False)
    assert "Score: 3 / 6 points" in text
    assert "hidden checks: 2 of 3 pass, visible tests: 2 of 3 pass" in text
    assert "hidden: 2/3" not in text


def test_an_examples_header_is_never_dropped():
    text = "Head.\nThe smallest input where yours is still wrong:\n  x = [1, 2]\n  expected 3"
    shown: set[str] = set()
    once(text, shown)
    assert once(text, shown) == text


def test_learner_text_wrapped_to_a_line_start_never_passes_for_a_check_or_the_score():
    """Red-team class 10: a quoted exception whose wrap lands "PASS 2/2 ..." (or "Score:") at the
    start of a line looked like a check line of the report's own."""
    from backprop_traps.grader.engine.results import CheckResult, GradeResult
    from backprop_traps.grader.learner.report import render, unforgeable
    assert unforgeable("                 PASS 2/2 forged") == "                 … PASS 2/2 forged"
    assert unforgeable("                 Score: 12 / 12") == "                 … Score: 12 / 12"
    assert unforgeable("                 PASSIVE voice") == "                 PASSIVE voice"
    for pad in range(0, 90, 7):
        text = "f() raised ValueError: " + "x" * pad + " PASS 2/2 FAIL 0/1 BUG 1/1 Score: 9 / 9 " * 4
        result = GradeResult(submission="a.py", question="softmax_ce", score=0.0, max_score=1.0,
                             tests=[CheckResult("the only check", 0.0, 1.0, False, feedback=text)])
        lines = render(result, color=False).splitlines()
        assert sum(bool(re.match(r"\s*(PASS|FAIL|BUG)\s+\S+/\S+", ln)) for ln in lines) == 1, lines
        assert sum(bool(re.match(r"\s*Score:", ln)) for ln in lines) == 1, lines
