"""`grade next`: what is due for review, and why (grader/learner/review.py)."""
from pathlib import Path

import click


def _command(question: str, kind: str, notebook: Path) -> str:
    """The command that practises one card."""
    if kind == "spoken":
        return f"grade interview {question}"
    return f"grade {notebook.name}" if (Path.cwd() / notebook.name).is_file() else f"grade start {question}"


@click.command("next")
@click.option("--all", "show_all", is_flag=True, help="Also list every card not yet due, with its date.")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo).")
def next_due(show_all, questions_dir):
    """Say what is due for review, most overdue first, and why: each question's code and its
    spoken answer are cards of a spaced-review schedule (FSRS-6), rated by your grades and
    interview checklists in this folder. Then the next new question, and what comes up."""
    from backprop_traps.grader.learner.history import History
    from backprop_traps.grader.learner.review import Review
    from backprop_traps.grader.learner.terminal import say  # history text: inert on the terminal
    from backprop_traps.grader.loading.questions import questions_root, solution_notebooks

    notebooks = solution_notebooks(questions_root(questions_dir))
    if not notebooks:
        say("No questions found.")
        return
    schedule = Review(History.load())
    moment, cards = schedule.moment, schedule.schedule(list(notebooks))
    due = [c for c in cards if c.due is not None and c.due <= moment]
    later = [c for c in cards if c.due is not None and c.due > moment]
    fresh = [c for c in cards if c.due is None]
    width = max(len(q) for q in notebooks)
    if due:
        say(f"Due now ({len(due)}), most overdue first:")
        for c in due:
            say(f"  {c.question:{width}}  {c.kind:6}  {c.when(moment):15}  last: {c.why}")
            say(f"  {'':{width}}  -> {_command(c.question, c.kind, notebooks[c.question])}")
    else:
        say("Nothing is due for review now.")
    untouched = [q for q in notebooks if all(c.question != q for c in due + later)]
    if untouched:
        first = untouched[0]
        say(f"\nNew: {first} ({len(untouched)} question{'s' * (len(untouched) != 1)} not started): "
            f"`{_command(first, 'code', notebooks[first])}`, then `grade interview {first}`.")
    elif fresh:
        c = fresh[0]
        say(f"\nNot yet reviewed: {c.question}'s {c.kind} ({c.why}): `{_command(c.question, c.kind, notebooks[c.question])}`.")
    if later:
        shown = later if show_all else later[:3]
        say("\nComing up: " + "; ".join(f"{c.question} {c.kind} {c.when(moment)}" for c in shown)
            + ("" if show_all or len(later) <= 3 else f"; and {len(later) - 3} more (`grade next --all`)."))
