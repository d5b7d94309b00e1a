"""`grade mock [ID]`: a timed mock interview (grader/learner/mock.py)."""
import random
import select
import shutil
import sys
from pathlib import Path

import click

from backprop_traps.grader.commands.options import MINUTES

WARNINGS = (600, 300, 60)
"""Seconds left at which the clock says so on a line of its own."""


class _OneSentence(click.UsageError):
    def show(self, file=None):
        from backprop_traps.grader.learner.terminal import say  # it may name what the history holds
        say(f"Error: {self.format_message()}", err=True)


def _timed_ask(clock):
    """``ask(prompt, seconds)`` on stdin: a line, None at its end, or TIMEOUT; the clock speaks
    up at 10, 5 and 1 minutes left."""
    from backprop_traps.grader.learner.mock import TIMEOUT
    warned = {w for w in WARNINGS if clock.left() <= w}

    def ask(prompt, seconds):
        sys.stdout.write(prompt)
        sys.stdout.flush()
        while True:
            left = clock.left()
            if left <= 0:
                sys.stdout.write("\n")
                return TIMEOUT
            upcoming = [w for w in WARNINGS if w < left and w not in warned]
            wait = min(left, left - max(upcoming)) if upcoming else left
            try:
                ready, _, _ = select.select([sys.stdin], [], [], max(0.05, min(wait, 60.0)))
            except (OSError, ValueError):  # no selectable stdin: read without a timeout
                ready = [sys.stdin]
            if ready:
                from backprop_traps.grader.learner.rehearsal import MAX_ANSWER_BYTES
                line = sys.stdin.readline(MAX_ANSWER_BYTES + 1)  # a longer line comes as the next
                return None if line == "" else line.rstrip("\n")
            for w in WARNINGS:
                if w not in warned and clock.left() <= w:
                    warned.add(w)
                    minutes = w // 60
                    sys.stdout.write(f"\n  ({minutes} minute{'s' * (minutes != 1)} left)\n{clock.redrawn(prompt)}")
                    sys.stdout.flush()
    return ask


def _notebook(question: str, root: Path) -> Path:
    """The learner's notebook for ``question`` here, copied from the stub when missing."""
    from backprop_traps.grader.loading.questions import exercise_path
    stub = exercise_path(question, root)
    mine = Path.cwd() / stub.name
    if not mine.exists() and stub.is_file():
        shutil.copyfile(stub, mine)
        click.echo(f"Copied the {question} stub to {mine.name}.")
    return mine


@click.command("mock")
@click.argument("question", required=False)
@click.option("--minutes", type=MINUTES, default=45.0, show_default=True,
              help="The time on the clock.")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo).")
def mock(question, minutes, questions_dir):
    """A mock interview against the clock: QUESTION (default: the most overdue for review,
    else one at random), its spoken answer, then the code in its notebook here (graded when
    you type done, or when the clock runs out), then the follow-ups. No hints and no reveal
    until it ends; then one summary (what was right, what was missed, what is due next),
    kept in this folder's .backprop_traps_history.json."""
    from backprop_traps.grader.learner import mock as flow
    from backprop_traps.grader.learner import mock_clock, rehearsal, review
    from backprop_traps.grader.learner.history import FILENAME, History
    from backprop_traps.grader.learner.terminal import say  # history and answers: inert on the terminal
    from backprop_traps.grader.loading.questions import questions_root

    root = questions_root(questions_dir)
    history = History.load()
    busy = mock_clock.running(history)
    if busy:
        raise _OneSentence(f"a mock interview of {busy['question']} is already running here; finish it first.")
    known = rehearsal.rehearsable(root)
    if question is None:
        if not known:
            raise _OneSentence(f"no question in {root} has an interview to rehearse.")
        due = review.Review(history).due_now(known)
        question = due[0].question if due else random.choice(known)
    try:
        chosen = rehearsal.load(question, root)
    except rehearsal.UnknownQuestion as e:
        raise _OneSentence(str(e))
    notebook = _notebook(chosen.question, root)
    clock = flow.Clock(minutes)
    mock_clock.start(history, chosen.question, minutes, review.now())
    history.save()
    outcome = None
    try:
        def grade(path):
            from backprop_traps.grader.engine.run import grade_path
            return grade_path(path, question=chosen.question, root=questions_dir)
        outcome = flow.run(chosen, notebook, minutes, _timed_ask(clock), say, grade, clock)
    except KeyboardInterrupt:
        say("\nMock stopped: nothing recorded.")
    finally:
        history = History.load()  # what other commands wrote meanwhile stays
        mock_clock.stop(history)
        if outcome is not None:
            _record(history, outcome, flow)
            next_up = review.Review(history)
            pick = next_up.due_now(known)
            due_next = (f"{pick[0].question}'s {pick[0].kind} ({pick[0].when(next_up.moment)}): `grade next`"
                        if pick else "nothing is due now; `grade next` shows what comes up")
            say(flow.summary(outcome, chosen, due_next))
        if history.save() and outcome is not None:
            say(f"\nRecorded in {FILENAME}.")
    if outcome is None:
        sys.exit(1)


def _record(history, outcome, flow) -> None:
    """The mock's scores go into the history like any grading and rehearsal, plus its summary."""
    from backprop_traps.grader.learner.after_grading import fingerprint as _fingerprint
    from backprop_traps.grader.learner import rehearsal, review
    spoken = outcome.spoken
    if spoken.get("of"):
        history.record_interview(outcome.question, spoken["hit"], spoken["of"], rehearsal.today())
        review.record_spoken(history, outcome.question, spoken["hit"], spoken["of"])
    code = outcome.code
    if code is not None and not code["error"] and code["max_score"]:
        history.record_score(outcome.question, code["score"], code["max_score"], _fingerprint(code["submission"]))
        review.record_code(history, outcome.question, code["score"], code["max_score"])
    from backprop_traps.grader.loading import persisted
    mocks = persisted.mock_summaries(history.sections.get(flow.SECTION, []), persisted.SetAside())
    history.sections[flow.SECTION] = (mocks + [outcome.record(rehearsal.today())])[-flow.MAX_MOCKS:]
