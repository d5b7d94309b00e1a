"""The answer corpus: every tests/answers/<id>/*.py with an `# expect:` header gets what it says.

A corpus answer is written the way people really write them (loops, vectorised, class-based,
PyTorch, ported from a course's API). It starts with comments that hold

    # question: <id>                              (a complete answer; without it, a snippet
                                                   appended to the solution's code)
    # expect: full | trap=<trap-id> | wrong | unnamed | error
    # not named: <trap-id> ...                    (optional: traps that must not be named)
    # says: <text>                                (optional: the report says this)

``full``: full marks. ``trap=<id>``: loses points, and a failed check names that trap.
``wrong``: loses points (no particular trap). ``unnamed``: loses points with no trap named.
``error``: not graded, with a sentence that says why. Whatever it gets, no check may break on it: an
answer is always judged by a sentence, never by an internal error. The reading and grading
are `grade validate`'s own (grader/authoring/corpus.py), so this test and validate agree.
Files without the header (most trap snippets) are graded too, for that last rule alone.

Each question's `grade validate --quick` test (test_<id>_is_sound, or test_new_and_validate.py's
test_every_shipped_question_with_checks_is_sound) already grades every answer validate judges
(``full``, ``trap``, ``wrong``, ``unnamed``, and snippets named after a trap) with the same
function, seed and base, and fails on a mismatch or a check that breaks in the grader. Graded
here as well, they cost the suite about three minutes of two workers' time for nothing (issue
27: the test command under 8 minutes), so here are only the answers validate leaves out: those
with no expectation (graded for "no grader error" alone) and ``error`` answers (an internal
error, which validate would take for the expected refusal).
"""
from __future__ import annotations

import re

import pytest

from conftest import REPO, solution_source
from backprop_traps.grader.authoring import corpus
from backprop_traps.grader.checks import load_question
from backprop_traps.grader.loading.questions import solution_notebooks

QUESTIONS = ["routing_trap", "per_step_update_trap", "vram_trap", "softmax_ce", "mlp_backprop",
             "tape_autodiff", "forward_vs_reverse", "straight_through"]
BROKEN = ("could not be checked", "internal grader error")
VALIDATE_JUDGES = {"full", "trap", "wrong", "unnamed"}  # the kinds soundness.check_corpus grades


def not_judged_by_validate():
    for question in solution_notebooks(REPO):
        traps = [t.id for t in load_question(question, REPO).traps]
        for answer in corpus.answers(REPO, question, traps):
            if answer.kind not in VALIDATE_JUDGES:
                yield pytest.param(question, answer, id=f"{question}/{answer.path.stem}")


@pytest.mark.parametrize("question, answer", list(not_judged_by_validate()))
def test_answer_gets_what_it_expects(question, answer):
    if re.search(r"^\s*(import|from) torch", answer.path.read_text(encoding="utf-8"), re.M):
        pytest.importorskip("torch")
    result = corpus.grade_answer(answer, question, REPO, seed=1234, base=solution_source(question))
    broken = [(t.name, t.feedback) for t in result.tests
              if t.grader_error or any(b in t.feedback.lower() for b in BROKEN)]
    assert not broken and not result.internal_error, broken or result.error
    if not corpus.header_expectation(answer.path.read_text(encoding="utf-8")):
        return  # no expectation: the question's own test judges it; here only "no grader error"
    problem = corpus.mismatch(answer, result, answer.path.name)  # validate's own verdict
    assert problem is None, problem


@pytest.mark.parametrize("question", QUESTIONS)
def test_each_question_has_right_and_wrong_answers(question):
    """At least 3 right and 5 wrong complete answers, so a change to the checks meets real code."""
    traps = [t.id for t in load_question(question, REPO).traps]
    kinds = [a.kind for a in corpus.answers(REPO, question, traps)
             if a.complete and corpus.header_expectation(a.path.read_text(encoding="utf-8"))]
    assert kinds.count("full") >= 3 and len(kinds) - kinds.count("full") >= 5, kinds
