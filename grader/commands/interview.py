"""`grade interview [ID]`: rehearse a question's spoken answer (grader/learner/rehearsal.py)."""
import json
import os
import sys

import click


class _OneSentence(click.UsageError):
    """A usage error told in one sentence, without the usage block (exit status 2)."""

    def show(self, file=None):
        click.echo(f"Error: {self.format_message()}", err=True)


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
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo); "
                   "or set BACKPROP_TRAPS_QUESTIONS.")
def interview(question, answer_file, as_json, questions_dir):
    """Rehearse QUESTION's interview aloud: the question, your answer, its key points as a
    checklist (points found in what you type come pre-ticked), the wrong answer most
    candidates give, the answer that gets you hired, then the follow-ups one at a time.
    The checklist score goes into this folder's .backprop_traps_history.json.

    Without QUESTION, the one that is due: never rehearsed first, then the lowest last
    checklist score, then the one rehearsed longest ago."""
    from backprop_traps.grader.learner.history import FILENAME, History
    from backprop_traps.grader.learner import rehearsal
    from backprop_traps.grader.loading.questions import questions_root

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
    history = History.load() if question is None or not as_json else None  # --json writes nothing
    if question is None:
        known = rehearsal.rehearsable(root)
        if not known:
            raise _OneSentence(f"no question in {root} has key points to rehearse "
                               "(solutions/NN_<id>.ipynb, its interview cell's **Key points.**).")
        question = rehearsal.due(known, history)
    try:
        chosen = rehearsal.load(question, root)
    except rehearsal.UnknownQuestion as e:
        raise _OneSentence(str(e))

    def record(hit, of):
        history.record_interview(chosen.question, hit, of, rehearsal.today())
        if history.save():
            click.echo(f"Recorded in {FILENAME}.")

    if answer_file is not None:
        try:
            text = rehearsal.read_answer(answer_file, sys.stdin)
        except OSError as e:
            raise _OneSentence(f"cannot read {inert(answer_file)}: {e.strerror or e}.")
        except ValueError as e:  # bounded.Unreadable: a link, a FIFO, a device, gone meanwhile
            raise _OneSentence(f"{inert(e)}: give the file that holds your answer, or - to read it from stdin.")
        result = rehearsal.check(chosen, text)
        if as_json:
            click.echo(json.dumps(result, indent=1, ensure_ascii=False))
            return
        click.echo(rehearsal.report(result, chosen.number))
        if result["of"]:
            record(result["hit"], result["of"])
        return
    rehearsal.rehearse(chosen, _ask, click.echo, record)
    due = rehearsal.rehearsable(root)
    if due:
        click.echo(f"\nNext due: `grade interview {rehearsal.due(due, history)}` "
                   "(or just `grade interview`); `grade list` shows your scores.")
