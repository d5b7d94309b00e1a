"""`grade reveal ID [--all]`: the next step of a question's derivation (grader/learner/reveal.py)."""
import click


@click.command("reveal")
@click.argument("question")
@click.option("--all", "show_all", is_flag=True, help="Show every step of the derivation at once.")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo).")
def reveal(question, show_all, questions_dir):
    """Show the next step of QUESTION's derivation, one step per call (--all: every step).

    Try the derivation yourself first, in the notebook's "Your derivation" cell. The number
    of steps shown is kept in this folder's .backprop_traps_history.json."""
    from backprop_traps.grader.learner.history import History
    from backprop_traps.grader.learner.reveal import render, reveal as next_steps
    from backprop_traps.grader.loading.questions import questions_root, solution_notebooks

    root = questions_root(questions_dir)
    known = solution_notebooks(root)
    from backprop_traps.grader.commands.learner import question_argument
    question = question_argument(question, known)
    history = History.load()
    from backprop_traps.grader.learner.mock_clock import refusal
    refused = refusal(history, "revealing the derivation")
    if refused:
        click.echo(refused, err=True)
        raise SystemExit(1)
    shown = next_steps(question, history, root, show_all=show_all)
    if shown.steps:
        history.save()
    click.echo(render(shown))
