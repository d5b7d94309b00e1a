"""`grade reveal ID [--all]`: the next step of a question's derivation (grader/learner/reveal.py)."""
import click


@click.command("reveal")
@click.argument("question", required=False)
@click.option("--all", "show_all", is_flag=True, help="Show every step of the derivation at once.")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo).")
def reveal(question, show_all, questions_dir):
    """Show the next step of QUESTION's derivation, one step per call (--all: every step).

    Try the derivation yourself first, in the notebook's "Your derivation" cell. The number
    of steps shown is kept in this folder's .backprop_traps_history.json.

    Without QUESTION, the question you are on: the one graded last here without full marks;
    else the first whose notebook is here; else the first not started."""
    from pathlib import Path

    from backprop_traps.grader.learner.history import History
    from backprop_traps.grader.learner.reveal import question_you_are_on, render, reveal as next_steps
    from backprop_traps.grader.loading.questions import questions_root, solution_notebooks

    root = questions_root(questions_dir)
    known = solution_notebooks(root)
    from backprop_traps.grader.commands.learner import question_argument
    history = History.load()
    picked = None
    if question is None:
        picked = question_you_are_on(history, known, Path.cwd())
        if picked is None:
            raise click.UsageError("every question has full marks here: name one, e.g. `grade reveal "
                                   f"{next(iter(known), 'routing_trap')}`.")
        question = picked[0]
    else:
        question = question_argument(question, known)
    from backprop_traps.grader.learner.mock_clock import refusal
    refused = refusal(history, "revealing the derivation")
    if refused:
        click.echo(refused, err=True)
        raise SystemExit(1)
    if picked:
        click.echo(f"({question}: {picked[1]}; `grade reveal ID` for another question.)\n")
    shown = next_steps(question, history, root, show_all=show_all)
    if shown.steps:
        history.save()
    click.echo(render(shown))
