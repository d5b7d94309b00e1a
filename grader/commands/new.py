"""`grade new`: scaffold a question (solution notebook, hidden checks, kernels, tests)."""
import shlex

import click


@click.command("new")
@click.argument("question")
@click.option("--title", default=None, help="The question's title (default: from its id).")
@click.option("--number", type=click.IntRange(1, 99), default=None,
              help="Its number NN in solutions/NN_<id>.ipynb (default: next).")
@click.option("--questions-dir", type=click.Path(file_okay=False), default=None,
              help="Folder with your own questions (same layout as this repo); "
                   "or set BACKPROP_TRAPS_QUESTIONS.")
def new(question, title, number, questions_dir):
    """Scaffold QUESTION: its solution notebook, hidden checks with one example check and
    one trap, kernels with forward and backward placeholders, and its tests. Fill in every
    SCAFFOLD: line, then run `grade release` and `grade validate QUESTION`."""
    from backprop_traps.grader.authoring.scaffold import ScaffoldError, new_question
    from backprop_traps.grader.loading.questions import questions_root

    root = questions_root(questions_dir)
    try:
        files = new_question(question, root, title=title, number=number)
    except ScaffoldError as e:
        raise click.UsageError(str(e))
    click.echo(f"new question {question} in {root}:")
    for role, path in files.items():
        click.echo(f"  {role:<12} {path}")
    where = f" --questions-dir {shlex.quote(str(root))}" if questions_dir else ""
    click.echo("next: fill in every line marked SCAFFOLD: (see docs/authoring.md), then\n"
               f"  grade release {question}{where} && grade validate {question}{where}")
