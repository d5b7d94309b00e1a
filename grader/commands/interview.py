"""`grade interview [ID]`: rehearse a question's spoken answer (grader/learner/rehearsal.py)."""
import json
import os
import sys

import click

from backprop_traps.grader.commands.options import MINUTES


class _OneSentence(click.UsageError):
    """A usage error told in one sentence, without the usage block (exit status 2)."""

    def show(self, file=None):
        from backprop_traps.grader.learner.terminal import say  # it may name what the history holds
        say(f"Error: {self.format_message()}", err=True)


def _ask(prompt):
    """One line from the terminal, or None at the end of input (Ctrl-D)."""
    try:
        return input(prompt)
    except EOFError:
        click.echo()
        return None


@click.command("interview")
@click.argument("question", required=False)
@click.option("--answer", "answer_file", metavar="FILE", default=None,
              help="Check this written answer (`-` reads stdin) instead of asking in the terminal.")
@click.option("--json", "as_json", is_flag=True,
              help="With --answer: print one JSON object (docs/contract.md) and record nothing.")
@click.option("--mock", is_flag=True, help="A timed mock interview instead (the same as `grade mock`).")
@click.option("--minutes", type=MINUTES, default=None,
              help="With --mock: the time on the clock (default 45).")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo); "
                   "or set BACKPROP_TRAPS_QUESTIONS.")
@click.pass_context
def interview(ctx, question, answer_file, as_json, mock, minutes, questions_dir):
    """Rehearse QUESTION's interview aloud: the question, your answer, its key points as a
    checklist (points found in what you type come pre-ticked, with the words that said
    them), the wrong answer most candidates give, the answer that gets you hired, then the
    follow-ups one at a time. The checklist score goes into this folder's
    .backprop_traps_history.json and schedules the next review (`grade next`).

    Without QUESTION, the spoken answer that is most overdue for review; else the first
    question never rehearsed; else the one due soonest."""
    from backprop_traps.grader.learner.history import FILENAME, History
    from backprop_traps.grader.learner import mock_clock, rehearsal, review
    from backprop_traps.grader.learner.terminal import inert_json, say  # answers and history: inert
    from backprop_traps.grader.loading.questions import questions_root

    if mock:
        if answer_file is not None or as_json:
            raise _OneSentence("--mock asks in the terminal: it cannot go with --answer or --json.")
        from backprop_traps.grader.commands.mock import mock as mock_command
        return ctx.invoke(mock_command, question=question, minutes=minutes or 45.0, questions_dir=questions_dir)
    if minutes is not None:
        raise _OneSentence("--minutes goes with --mock (or `grade mock --minutes N`).")
    if as_json and answer_file is None:
        raise _OneSentence("--json needs --answer FILE (or --answer - to read the answer from stdin).")
    from backprop_traps.grader.sandbox.inert import inert  # a file name may carry anything
    if answer_file not in (None, "-"):
        if os.path.isdir(answer_file):
            raise _OneSentence(f"{inert(answer_file)} is a folder: give the file that holds your answer.")
        if not os.path.lexists(answer_file):
            raise _OneSentence(f"{inert(answer_file)} does not exist: give the file that holds your answer, "
                               "or - to read it from stdin.")
    root = questions_root(questions_dir)
    history = History.load()  # --json reads it (a running mock refuses) but writes nothing
    refused = mock_clock.refusal(history, "rehearsing an interview (it shows the answers)")
    if refused:
        say(refused, err=True)
        sys.exit(1)
    if question is None:
        known = rehearsal.rehearsable(root)
        if not known:
            raise _OneSentence(f"no question in {root} has key points to rehearse "
                               "(solutions/NN_<id>.ipynb, its interview cell's **Key points.**).")
        question = review.Review(history).pick(known, review.SPOKEN)
    try:
        chosen = rehearsal.load(question, root)
    except rehearsal.UnknownQuestion as e:
        raise _OneSentence(str(e))

    def record(hit, of):
        history.record_interview(chosen.question, hit, of, rehearsal.today())
        review.record_spoken(history, chosen.question, hit, of)
        if history.save():
            say(f"Recorded in {FILENAME}.")

    if answer_file is not None:
        try:
            text = rehearsal.read_answer(answer_file, sys.stdin)
        except OSError as e:
            raise _OneSentence(f"cannot read {inert(answer_file)}: {e.strerror or e}.")
        except rehearsal.AnswerTooLong as e:  # refused at once, never read past the cap
            raise _OneSentence(f"{inert(e)}; give the answer itself (a spoken answer is a few hundred words).")
        except ValueError as e:  # bounded.Unreadable: a link, a FIFO, a device, gone meanwhile
            raise _OneSentence(f"{inert(e)}: give the file that holds your answer, or - to read it from stdin.")
        result = rehearsal.check(chosen, text)
        if as_json:
            click.echo(inert_json(json.dumps(result, indent=1, ensure_ascii=False)))
            return
        say(rehearsal.report(result, chosen.number))
        if result["of"]:
            record(result["hit"], result["of"])
        return
    rehearsal.rehearse(chosen, _ask, say, record)
    known = rehearsal.rehearsable(root)
    if known:
        say(f"\nNext due: `grade interview {review.Review(history).pick(known, review.SPOKEN)}` "
            "(or just `grade interview`); `grade next` shows everything due.")
