"""What a failure report says about a recognised trap, and what ``--hint`` says (issue 22).

The report says what is wrong (the trap's id, shown beside the check, and its one-line symptom),
where, and how far off; never the fix. The fix comes from ``--hint``, one step at a time, and
follows the trap that was recognised: the question to ask yourself, the rule, the pointer. A
trap may author its own three hints; otherwise they are built from the failing check's hints
(its first, a question, and its last, a pointer) around the rule, the explanation's sentences
after the symptom. A failure that names no trap but says where the values differ gets hints
that start from that difference (grader/engine/difference_hints.py), never the check's own, which
may point at a mistake this answer does not make.
"""
from __future__ import annotations

from backprop_traps.grader.engine.difference_hints import from_difference  # noqa: F401 (named here too)
from backprop_traps.grader.engine.question import Fail
from backprop_traps.grader.engine.sentences import (  # noqa: F401 (named here too)
    SENTENCE_END as _SENTENCE_END, first_sentence, rest_after_first)


def split(question, check, feedback: str, trap_id: str | None) -> tuple[str, tuple[str, ...]]:
    """``(feedback without the fix, the hints --hint gives)`` for a failed check."""
    if trap_id is None:
        return feedback, from_difference(check, feedback) or check.hints
    try:
        trap = question.trap(trap_id)
    except KeyError:
        return feedback, check.hints
    symptom = trap.what_is_wrong
    bare = trap.explanation.rstrip(".")  # a check may cut the last period to add where it failed
    if trap.explanation in feedback:
        feedback = feedback.replace(trap.explanation, symptom)
    elif bare and bare in feedback:
        feedback = feedback.replace(bare, symptom.rstrip("."))
    elif symptom not in feedback:
        head, sep, tail = feedback.partition("\n")
        feedback = f"{head.rstrip()} {symptom}{sep}{tail}"
    return feedback, trap.hints or ladder(check.hints, trap.explanation)


def ladder(check_hints: tuple[str, ...], explanation: str) -> tuple[str, ...]:
    """Three steps for a trap without hints of its own: the check's first hint (the question to
    ask yourself), the explanation's rule, the check's last hint (the pointer)."""
    rule = rest_after_first(explanation) or explanation
    steps = [check_hints[0]] if check_hints else []
    steps.append(rule)
    if len(check_hints) > 1:
        steps.append(check_hints[-1])
    seen, out = set(), []
    for step in steps:
        if step and step not in seen:
            seen.add(step)
            out.append(step)
    return tuple(out)


def named_failure(failure, where: str | None, got, candidates: dict, diagnose, same_as, explanation: dict):
    """``failure`` with the input's sizes (``where``) and, if one is recognised, the trap: first
    by ``same_as(got, candidates)`` (equality with a known-wrong form), then by the probe
    ``diagnose()``, which returns (trap or None, what it showed or None). A shape off by an
    axis of length 1 (``settled``) keeps its shape message and names no trap."""
    trap, observed = failure.trap, None
    if failure.settled:
        head = failure.feedback.rstrip(".")
        return Fail(f"{head}; input {where}." if where else failure.feedback, None, settled=True)
    if trap is None:
        trap = same_as(got, candidates)
    if trap is None and diagnose is not None:
        trap, observed = diagnose()
    head, _, details = failure.feedback.partition("\n")
    text = f"{head.rstrip('.')}; input {where}." if where else head
    if observed:
        text += f" {observed}"
    if trap is not None and explanation[trap].rstrip(".") not in text:  # head's '.' became '; input'
        text += f" {explanation[trap]}"
    return Fail(text + (f"\n{details}" if details else ""), trap)
