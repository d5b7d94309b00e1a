"""What ``grade FILE`` (and a notebook's "Grade it" cell) does after grading: remember each
score in this folder's history (a new try also rates its review card), and offer or show the
next hint. Shared by the command line and the notebook, so it lives with the learner's other
state, below both."""
from __future__ import annotations

import shlex
import sys

from backprop_traps.grader.sandbox.inert import inert


def fingerprint(path: str) -> str | None:
    """A hash of what was graded: grading the same answer again is not an attempt. For a
    notebook, its graded code only, so that saving new outputs does not make a new attempt."""
    import hashlib
    from backprop_traps.grader.loading import bounded
    from backprop_traps.grader.loading.submission import MAX_BYTES
    try:
        data = bounded.read_bytes(path, MAX_BYTES)  # the learner's file: the one bounded way
    except bounded.Unreadable:
        return None
    if path.endswith(".ipynb"):
        from backprop_traps.grader.loading.notebook import graded_code, parse_notebook
        try:
            text = data.decode("utf-8")
            if bounded.json_shape_error(text) is None:
                data = graded_code(parse_notebook(text)).encode("utf-8")
        except ValueError:  # not UTF-8, not a notebook: the bytes themselves
            pass
    return hashlib.sha256(data).hexdigest()


def _review(history, result) -> None:
    """Rate a new try into the review schedule. The history's records passed its schema on load
    (grader/loading/persisted.py), so this cannot fail on what the file held; should the
    scheduler fail all the same, the grading is still recorded and one sentence says why."""
    from backprop_traps.grader.learner import review
    try:
        review.record_code(history, result.question, result.score, result.max_score)
    except Exception as e:  # noqa: BLE001 (the score is recorded whatever the scheduler does)
        print(f"The grading is recorded, but its review card was not updated (a grader error: "
              f"{type(e).__name__}); please report it.", file=sys.stderr)


def after_grading(results, want_hint: bool, color: bool, pointers: bool = True) -> str:
    """Remember each graded result's score in this folder's history, and show the next hint
    for the first failing check (``--hint``) or say that one is available. Returns the text.
    ``pointers=False`` leaves out the full-marks pointers (the notebook's saved file is not what
    its kernel ran: no "full marks" then)."""
    from backprop_traps.grader.learner.history import History
    from backprop_traps.grader.learner.next_steps import full_marks_text
    from backprop_traps.grader.learner.report import render_hint

    history = History.load()
    texts = []
    for r in results:
        if r.error or r.question is None:
            if want_hint:
                texts.append(f"{r.submission}: no hint until the file can be graded (see above).")
            continue
        attempts = history.questions.get(r.question, {}).get("attempts", 0)
        history.record_score(r.question, r.score, r.max_score,
                             r.fingerprint or fingerprint(r.submission))  # hashed when it was read
        if history.questions[r.question].get("attempts", 0) > attempts:  # a new try: a review
            _review(history, r)
        failing = [t for t in r.tests if not t.passed]
        if not failing:
            if want_hint:
                texts.append(f"{inert(r.submission)}: every hidden check passes; no hint needed.")
            text = full_marks_text(r.question) if pointers else ""
            if text:
                texts.append(text)
            continue
        target = next((t for t in failing if t.hints), failing[0])
        if want_hint:
            hint = history.next_hint(r.question, target.name, target.hints) if target.hints else None
            texts.append(render_hint(target.name, hint, target.hints, color))
        elif history.hints_seen(r.question, target.name) < len(target.hints):
            texts.append(f'Stuck on "{target.name}"? `grade {inert(shlex.quote(r.submission))} --hint` '
                         "shows a hint.")
    history.save()
    return "\n\n".join(texts)
